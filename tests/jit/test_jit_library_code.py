"""Code shapes that installed libraries use everywhere: `**kwargs` changed by the callee, functions
made inside interpreted library code (comprehensions on 3.11), and transformers' ModelOutput.
Each is one graph, equal to eager call after call."""

from __future__ import annotations

import abc
import collections
import copy
import dataclasses
import importlib.util
import os
import sys

import pytest
import torch
import torch.nn as nn
from jit_helpers import assert_one_graph, check_program

from jitlab.jit import explain_rule, jit

SEEN: list = []


def scale(x, **options):
    factor = options.pop("factor", 2.0)  # the callee changes its own **kwargs: a new dict per call
    options["seen"] = True
    return x * factor + len(options)


def uses_options(x):
    return scale(x, factor=3.0) + scale(x, bias=1)


def keeps_its_options(x, **options):
    options.pop("unused", None)
    SEEN.append(options)  # the dict leaves the call: the entry rebuilds it as eager made it
    return x + len(options)


def test_a_callee_changes_its_own_kwargs():
    jitted = check_program(lambda: uses_options, [((torch.randn(3),), {}) for _ in range(3)])
    assert_one_graph(jitted)


def test_top_level_kwargs_are_popped_and_kept_outside():
    SEEN.clear()
    inputs = [((torch.randn(3),), {"unused": 1, "n": 2}) for _ in range(2)]
    inputs += [((torch.randn(3),), {"n": 5}) for _ in range(2)]
    jitted = check_program(lambda: keeps_its_options, inputs, observe=lambda _: list(SEEN))
    assert_one_graph(jitted)
    eager_seen, jit_seen = SEEN[0::2], SEEN[1::2]  # check_program calls eager, then the jitted program
    assert eager_seen == jit_seen == [{"n": 2}, {"n": 2}, {"n": 5}, {"n": 5}]


def _library_module(tmp_path, monkeypatch):
    """A module that jitlab.jit takes for installed library code (its file is entered in the cache
    of `is_user_code` as a library file, as one in site-packages would be)."""
    from jitlab.jit.interpreter import hooks

    path = tmp_path / "tiny_library.py"
    monkeypatch.setitem(hooks._USER_CACHE, str(path), False)
    path.write_text(
        "def forward_wrapper(fn):\n"
        "    def forward(self, x, **kwargs):\n"
        "        flags = {name: kwargs.get(name, False) for name in ('a', 'b')}\n"
        "        flags['c'] = True\n"
        "        return fn(self, x) * len([k for k, v in flags.items() if v])\n"
        "    return forward\n"
    )
    spec = importlib.util.spec_from_file_location("tiny_library", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not hooks.is_user_code(module.forward_wrapper.__code__)
    monkeypatch.setitem(sys.modules, "tiny_library", module)
    return module


def test_functions_made_by_interpreted_library_code_are_interpreted(tmp_path, monkeypatch):
    library = _library_module(tmp_path, monkeypatch)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        @library.forward_wrapper
        def forward(self, x):  # the wrapper is named forward, as functools.wraps names them
            return self.fc(x)

    jitted = check_program(Model, [((torch.randn(2, 3),), {"a": True}) for _ in range(3)])
    assert_one_graph(jitted)


@dataclasses.dataclass
class NotAModelOutput(collections.OrderedDict):
    """A dataclass and an OrderedDict, like ModelOutput, but not one: built natively, of unknown origin."""

    logits: torch.Tensor | None = None

    def __post_init__(self):
        self["logits"] = self.logits


def test_other_dict_dataclasses_still_fall_back():
    def make_output(x):
        return NotAModelOutput(logits=x + 1)

    from jitlab.jit.tracing.owned_results import is_value_holder_class

    assert not is_value_holder_class(NotAModelOutput)
    jitted = jit(make_output)
    for _ in range(2):
        x = torch.randn(2)
        assert torch.equal(jitted(x)["logits"], x + 1)
    explanation = jitted.explain()  # built natively (its __post_init__ too): never cached
    assert explanation.graphs_per_call == 0 and "NotAModelOutput" in explanation.fallbacks[0]


def test_transformers_model_outputs_are_rebuilt():
    if os.environ.get("CI") != "true":  # CI installs the zoo extra: there a missing library fails
        pytest.importorskip("transformers")
    from transformers.modeling_outputs import BaseModelOutput

    from jitlab.jit.tracing.owned_results import is_value_holder_class

    assert is_value_holder_class(BaseModelOutput)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            hidden = torch.relu(self.fc(x))
            out = BaseModelOutput(last_hidden_state=hidden, hidden_states=(x, hidden))
            return out[0] * 2, out.hidden_states[0], out

    jitted = check_program(Encoder, [((torch.randn(2, 4),), {}) for _ in range(3)])
    assert_one_graph(jitted)
    out = jitted(torch.randn(2, 4))[2]
    assert type(out) is BaseModelOutput and list(out.keys()) == ["last_hidden_state", "hidden_states"]


class Box:
    def __init__(self, value):
        self.value = value
        self.count = 1


class Layer(abc.ABC):  # as transformers' CacheLayerMixin
    @abc.abstractmethod
    def size(self) -> int: ...


class Holder(Layer):  # ABCMeta, its abstract method given: instantiated like a plain class
    def __init__(self, items):
        self.items = items
        self.me = self  # a cycle: the rebuilt object refers to itself too

    def size(self) -> int:
        return len(self.items)


class Slotted:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def test_plain_objects_made_in_the_call_are_rebuilt_with_their_links():
    def make(x):
        box = Box(x + 1)
        box.count += 1
        return Holder([box, box]), x * 2

    jitted = jit(make, backend="eager")
    for _ in range(3):
        x = torch.randn(3)
        holder, doubled = jitted(x)
        assert type(holder) is Holder and holder.me is holder
        assert holder.items[0] is holder.items[1] and type(holder.items[0]) is Box
        assert torch.equal(holder.items[0].value, x + 1) and holder.items[0].count == 2
        assert torch.equal(doubled, x * 2)
    assert_one_graph(jitted)


def test_objects_with_slots_still_run_eagerly():
    def make(x):
        return Slotted(x + 1)

    jitted = jit(make, backend="eager")
    for _ in range(2):
        x = torch.randn(3)
        assert torch.equal(jitted(x).value, x + 1)
    assert any("Slotted" in reason for reason in jitted.explain().fallbacks)


CONFIG = {"scale": 2.0, "inner": {"shift": 1.0}, "drop": True}


def test_deep_copies_belong_to_the_call_and_their_source_is_guarded():
    def use_config(x):
        settings = copy.deepcopy(CONFIG)
        settings.pop("drop")
        settings["inner"]["shift"] += 1.0  # changes the copy, never CONFIG
        return x * settings["scale"] + settings["inner"]["shift"]

    jitted = jit(use_config, backend="eager")
    x = torch.ones(2)
    for _ in range(2):
        assert torch.equal(jitted(x), x * 2.0 + 2.0)
    assert CONFIG == {"scale": 2.0, "inner": {"shift": 1.0}, "drop": True}
    assert_one_graph(jitted)
    CONFIG["inner"]["shift"] = 5.0  # what the copy reads changed: the guards see it
    try:
        assert torch.equal(jitted(x), x * 2.0 + 6.0)
    finally:
        CONFIG["inner"]["shift"] = 1.0


def test_explain_rule_says_what_is_interpreted_and_why():
    from jitlab.jit import explain_rule

    assert explain_rule(uses_options).startswith("interpreted: user code")
    assert explain_rule(nn.Linear(2, 2)).startswith("interpreted: a forward method")
    assert explain_rule(torch.relu).startswith("native:") and "C function" in explain_rule(torch.relu)
    assert (
        explain_rule(copy.deepcopy) == "native: installed or standard-library code: run as a black box (copy)"
    )
    assert explain_rule(torch.nn.functional.dropout).startswith("native: torch's internals")
    if os.environ.get("CI") != "true":
        pytest.importorskip("transformers")
    from transformers import DynamicCache

    assert explain_rule(DynamicCache).startswith("interpreted: a model library")


def test_environment_variables_read_one_by_one_are_guarded(monkeypatch):
    def pick(x):
        if os.environ.get("JITLAB_TEST_PATH", "slow") == "fast":
            x = x + 1
        if "JITLAB_TEST_SCALE" in os.environ:
            x = x * float(os.environ["JITLAB_TEST_SCALE"])
        return x * 2 if os.getenv("JITLAB_TEST_DOUBLE") else x

    monkeypatch.delenv("JITLAB_TEST_PATH", raising=False)
    monkeypatch.delenv("JITLAB_TEST_SCALE", raising=False)
    monkeypatch.delenv("JITLAB_TEST_DOUBLE", raising=False)
    jitted = jit(pick, backend="eager")
    x = torch.ones(2)
    settings = [{}, {}, {"JITLAB_TEST_PATH": "fast"}, {"JITLAB_TEST_SCALE": "3"}, {"JITLAB_TEST_DOUBLE": "1"}]
    for setting in settings:
        for name, value in setting.items():
            monkeypatch.setenv(name, value)
        for _ in range(2):  # each setting: a capture, then a hit of its entry
            assert torch.equal(jitted(x), pick(x)), setting
    explanation = jitted.explain()
    assert explanation.fallbacks == ()
    assert explanation.graph_count == 4 and explanation.misses >= 3


def test_repeat_interleave_by_a_number_has_a_static_shape():
    def by_number(x):
        y = torch.repeat_interleave(x[:, None, :], 2, 1) + x.repeat_interleave(2, dim=1)[:, None, :3]
        return y.sum(1) if y.shape[1] == 2 else y  # Python reads the shape

    def by_tensor(x, repeats):
        y = torch.repeat_interleave(x, repeats)
        return y * 2 if y.shape[0] > 3 else y - 1  # the shape is data: read, it is re-checked

    static, dynamic = jit(by_number, backend="eager"), jit(by_tensor, backend="eager")
    for repeats in ([1, 2, 0], [1, 2, 0], [3, 1, 1], [0, 0, 1]):
        x = torch.randn(2, 3)
        assert torch.equal(static(x), by_number(x))
        assert torch.equal(dynamic(x[0], torch.tensor(repeats)), by_tensor(x[0], torch.tensor(repeats)))
    assert [s for g in static.explain().graphs for s in g.speculations] == []
    checks = [s for g in dynamic.explain().graphs for s in g.speculations]
    assert checks and all("data-dependent shape" in s for s in checks), checks


def test_model_outputs_filled_out_of_field_order_run_eagerly():
    if os.environ.get("CI") != "true":
        pytest.importorskip("transformers")
    from transformers.modeling_outputs import BaseModelOutputWithPast

    def fill(x):
        out = BaseModelOutputWithPast(last_hidden_state=x + 1)
        out["attentions"] = (x * 2,)  # set before hidden_states: the keys are not in field order
        out["hidden_states"] = (x * 3,)
        return out

    jitted = jit(fill, backend="eager")
    for _ in range(2):
        x = torch.randn(2)
        got, expected = jitted(x), fill(x)
        assert (
            list(got.keys()) == list(expected.keys()) == ["last_hidden_state", "attentions", "hidden_states"]
        )
        assert all(torch.equal(a, b) for a, b in zip(got.to_tuple()[1], expected.to_tuple()[1], strict=True))
    assert any("not its fields set, in their order" in r for r in jitted.explain().fallbacks)


def test_closures_made_in_the_call_are_never_returned_stale():
    """A lambda made by the call holds this call's values: returned (alone, or inside an object made
    in the call, as a cache holds its callbacks), it must be the new one of every call."""

    def make(x):
        y = x + 1
        return Box(lambda: y), (lambda: y * 2)

    jitted = jit(make, backend="eager")
    for i in range(3):
        x = torch.full((2,), float(i))
        box, double = jitted(x)
        assert torch.equal(box.value(), x + 1) and torch.equal(double(), (x + 1) * 2)
    assert any("made during the call" in reason for reason in jitted.explain().fallbacks)


@pytest.mark.parametrize("filename", ["<stdin>", "<ipython-input-3-1a2b>", "<my-cell>"])
def test_code_typed_at_a_prompt_is_interpreted_and_its_globals_guarded(filename):
    """A function typed into `python -`, the REPL or IPython, or made by exec: run natively, its read
    of a global would not be guarded, and a later change of the global would not be seen."""
    namespace = {"SCALE": 2.0, "__name__": "__main__"}
    exec(compile("def scaled(x):\n    return x * SCALE\n", filename, "exec"), namespace)
    scaled = namespace["scaled"]
    jitted = jit(scaled, backend="eager")
    x = torch.ones(2)
    for scale in (2.0, 2.0, 3.0, 3.0):
        namespace["SCALE"] = scale
        assert torch.equal(jitted(x), x * scale), (filename, scale)
    assert jitted.explain().graph_count == 2


def test_functions_of_unknown_origin_are_not_returned_stale():
    namespace = {"__name__": "__main__"}
    exec(compile("def make(x):\n    y = x + 1\n    return lambda: y\n", "<stdin>", "exec"), namespace)
    jitted = jit(namespace["make"], backend="eager")
    for i in range(3):
        x = torch.full((2,), float(i))
        assert torch.equal(jitted(x)(), x + 1)


@torch.no_grad()
def _labels(x):
    return (x > 0).float() * 2


class _Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    @torch.inference_mode()
    def _frozen(self, x):
        return x.abs().sum()

    @torch.enable_grad()
    def _scored(self, x):
        return self.linear(x) * _labels(x)

    def forward(self, x):
        with torch.no_grad():
            y = self._scored(x)  # enable_grad inside no_grad: y has a gradient history
        return y + float(self._frozen(x) > 0)


def test_torch_context_managers_as_decorators_are_interpreted():
    """`@torch.no_grad()` and friends wrap the function in torch's `decorate_context`; interpreting
    that wrapper keeps the call one graph, with grad mode as eager sets it."""
    assert explain_rule(_labels).startswith("interpreted: torch's decorator form of a context manager")
    jitted = check_program(
        lambda: lambda x: _labels(x) + x, [((torch.randn(4, requires_grad=True),), {})] * 3
    )
    assert_one_graph(jitted)
    out = jitted(torch.randn(4, requires_grad=True))
    assert out.requires_grad  # the + x outside the no_grad function keeps the history
    scorer = check_program(_Scorer, [((torch.randn(2, 4),), {}) for _ in range(3)])
    result = scorer(torch.randn(2, 4))
    assert result.requires_grad and scorer.explain().fallbacks == ()


class _CastCell(nn.Module):
    """kakaobrain/torchgpipe's Cell: `typing.cast` of its ModuleList and of a tuple of indices."""

    def __init__(self):
        super().__init__()
        self.ops = nn.ModuleList([nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4)])
        self.indices = (0, 1, 1)

    def forward(self, x):
        import typing

        ops = typing.cast(nn.ModuleList, self.ops)
        indices = typing.cast(typing.List[int], self.indices)  # noqa: UP006 - as torchgpipe writes it
        states = [x, x * 2]
        for i, op in enumerate(ops):
            states.append(op(states[indices[i]]))
        return typing.cast(torch.Tensor, states[-1])


def test_typing_cast_is_interpreted_and_the_module_passed_through_it_is_not_a_callback():
    import typing

    assert explain_rule(typing.cast).startswith("interpreted: returns its argument")
    jitted = check_program(_CastCell, [((torch.randn(3, 4),), {}) for _ in range(3)])
    assert_one_graph(jitted)
