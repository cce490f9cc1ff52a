"""Guard soundness: between calls, change each outside value the program read (a global, an attribute,
a closure variable, a submodule, an input's shape, dtype or requires_grad, a list argument) and check
that the jitted output still equals eager, and that the cache recaptured instead of reusing a stale
graph."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from jitlab.jit import jit

OFFSET = 1.0
ACTIVATION = torch.relu


class Reader(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = 0.5
        self.use_bias = True
        self.mode = "sum"
        self.sizes = [1, 2]

    def forward(self, x, weights):
        y = ACTIVATION(self.fc(x)) * self.scale + OFFSET
        if self.use_bias:
            y = y + 1
        total = y.sum() if self.mode == "sum" else y.mean()
        for w in weights:
            y = y * w
        return y + total + len(self.sizes)


def _compare(model, jitted, x, weights):
    expected = model(x, weights)
    got = jitted(x, weights)
    assert expected.dtype == got.dtype and expected.shape == got.shape
    assert expected.requires_grad == got.requires_grad
    assert torch.allclose(expected, got)


def _changes(model):
    """Each step changes one outside value the program reads."""
    global OFFSET, ACTIVATION

    def set_global():
        global OFFSET
        OFFSET = 5.0

    def set_activation():
        global ACTIVATION
        ACTIVATION = torch.tanh

    yield "global scalar", set_global, None
    yield "global function", set_activation, None
    yield "float attribute", lambda: setattr(model, "scale", 3.0), None
    yield "bool attribute", lambda: setattr(model, "use_bias", False), None
    yield "str attribute", lambda: setattr(model, "mode", "mean"), None
    yield "list attribute length", lambda: model.sizes.append(3), None
    yield "submodule replaced", lambda: setattr(model, "fc", nn.Linear(4, 4)), None
    yield "parameter data", lambda: model.fc.weight.data.mul_(2), None
    yield "input shape", None, torch.randn(3, 4)
    yield "input dtype", None, torch.randn(2, 4, dtype=torch.float64)
    yield "input requires_grad", None, torch.randn(2, 4, requires_grad=True)
    yield "train/eval", lambda: model.eval(), None
    OFFSET, ACTIVATION = 1.0, torch.relu


def test_guards_catch_every_change():
    global OFFSET, ACTIVATION
    OFFSET, ACTIVATION = 1.0, torch.relu
    torch.manual_seed(0)
    model = Reader()
    jitted = jit(model, backend="eager", max_entries=32)
    x = torch.randn(2, 4)
    weights = [0.5, 2.0]
    _compare(model, jitted, x, weights)
    _compare(model, jitted, x, weights)
    try:
        for label, change, new_x in _changes(model):
            if change is not None:
                change()
            if new_x is not None:
                x = new_x
                if x.dtype == torch.float64:
                    model.double()
                else:
                    model.float()
            for n in range(2):
                try:
                    _compare(model, jitted, x, weights)
                except AssertionError as exc:
                    raise AssertionError(f"after changing the {label}, call {n}") from exc
            assert jitted.explain().disabled is None, label
    finally:
        OFFSET, ACTIVATION = 1.0, torch.relu
    report = jitted.explain()
    assert report.graph_count >= 10
    assert sum(g.hits for g in report.graphs) >= 10


def test_list_argument_contents_are_guarded():
    def f(x, weights):
        for w in weights:
            x = x * w
        return x

    jitted = jit(f, backend="eager")
    x = torch.ones(2)
    assert torch.equal(jitted(x, [2.0, 3.0]), torch.full((2,), 6.0))
    assert torch.equal(jitted(x, [2.0, 3.0]), torch.full((2,), 6.0))
    assert torch.equal(jitted(x, [2.0, 4.0]), torch.full((2,), 8.0))
    assert torch.equal(jitted(x, [2.0]), torch.full((2,), 2.0))


def test_closure_cell_is_guarded():
    factor = 2.0

    def f(x):
        return x * factor

    jitted = jit(f, backend="eager")
    assert torch.equal(jitted(torch.ones(1)), torch.full((1,), 2.0))
    factor = 7.0  # noqa: F841 - read by f through its closure cell
    assert torch.equal(jitted(torch.ones(1)), torch.full((1,), 7.0))


def test_aliased_arguments_are_guarded():
    def f(a, b):
        a.add_(1)
        return a + b

    jitted = jit(f, backend="eager")
    x, y = torch.zeros(2), torch.zeros(2)
    assert torch.equal(jitted(x, y), torch.ones(2))
    z = torch.zeros(2)
    # same object twice: eager gives 2 (b sees the in-place add); a stale graph would give 1
    assert torch.equal(jitted(z, z), torch.full((2,), 2.0))


def test_guard_function_is_one_generated_function():
    model = Reader()
    jitted = jit(model, backend="eager")
    jitted(torch.randn(2, 4), [1.0])
    entry = jitted.entries[0]
    assert entry.source.startswith("def entry(args, kwargs):")
    assert "TG" in entry.source  # one C++ tensor check for all tensors
    kinds = {g.split(":")[0] for g in entry.guards}
    assert {"TENSOR_MATCH", "ID_MATCH", "EQUALS_MATCH", "TYPE_MATCH"} <= kinds


def test_outside_state_read_or_changed_by_native_code():
    import dataclasses
    import heapq

    @dataclasses.dataclass
    class Cfg:
        scale: float = 2.0

    cfg = Cfg()
    allowed = {"a", "b"}
    heap: list = []

    def reads(x, key):
        factor = sum(dataclasses.astuple(cfg))  # native code reads cfg's fields
        return x * factor if key in allowed else x

    jitted = jit(reads, backend="eager")
    x = torch.ones(1)
    assert torch.equal(jitted(x, "a"), torch.full((1,), 2.0))
    cfg.scale = 5.0
    assert torch.equal(jitted(x, "a"), torch.full((1,), 5.0))
    allowed.discard("a")
    assert torch.equal(jitted(x, "a"), x)

    def pushes(x):
        heapq.heappush(heap, len(heap))  # a native function changes an outside list
        return x + len(heap)

    pushed = jit(pushes, backend="eager")
    for n in range(1, 4):
        assert torch.equal(pushed(x), x + n)
    assert heap == [0, 1, 2]
    assert "changed an outside list" in pushed.explain().disabled

    def reseeds(x):
        torch.manual_seed(0)
        return x + torch.rand(1)

    reseeded = jit(reseeds, backend="eager")
    assert torch.equal(reseeded(x), reseeded(x))
    assert "global state" in reseeded.explain().disabled


def test_attribute_names_that_are_not_identifiers():
    model = nn.Module()
    setattr(model, "odd name", 2.0)
    setattr(model, "class", 3.0)

    def f(x):
        return x * getattr(model, "odd name") + getattr(model, "class")

    jitted = jit(f, backend="eager")
    assert torch.equal(jitted(torch.ones(1)), torch.full((1,), 5.0))
    setattr(model, "odd name", 4.0)
    assert torch.equal(jitted(torch.ones(1)), torch.full((1,), 7.0))
    assert jitted.explain().graph_count == 2


def test_caught_tensor_error_is_not_cached():
    def f(x, idx):
        try:
            return x[idx]  # raises for out-of-range values: data the guards do not see
        except IndexError:
            return x * 0

    jitted = jit(f, backend="eager")
    x = torch.arange(3.0)
    assert torch.equal(jitted(x, torch.tensor([5])), torch.zeros(3))
    assert torch.equal(jitted(x, torch.tensor([1])), torch.tensor([1.0]))
    assert "raised" in jitted.explain().disabled


def test_a_conv_tuple_is_checked_once_and_still_guarded():
    """A conv's `stride` is read (its type checked) and then handed to native code (its value checked):
    the one TUPLE_MATCH, which checks the type too, takes the TYPE_MATCH's place. Changing the value,
    or giving a list of the same values, must still miss the cache."""
    conv = nn.Conv2d(3, 4, 3, stride=(2, 2))
    jitted = jit(conv, backend="eager")
    x = torch.randn(1, 3, 9, 9)
    assert torch.equal(jitted(x), conv(x))
    guards = jitted.entries[0].guards
    assert "TUPLE_MATCH: self.stride == (2, 2)" in guards
    assert not any(g.startswith("TYPE_MATCH: type(self.stride)") for g in guards)
    for stride in [(1, 1), [2, 2]]:
        conv.stride = stride
        expected = conv(x)
        assert torch.equal(jitted(x), expected) and jitted(x).shape == expected.shape
    assert len(jitted.entries) == 3  # each change missed the cache and was captured anew
    conv.stride = (True, True)  # equal to (1, 1), whose graph is cached; eager refuses bools
    with pytest.raises(TypeError, match="conv2d"):
        conv(x)
    with pytest.raises(TypeError, match="conv2d"):
        jitted(x)
