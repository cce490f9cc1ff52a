"""Guards that cost less per call, and still catch every change.

A cache hit runs every guard of the entry, so on a model of a few hundred modules and parameters the
guards are most of jitlab.jit's cost per call. These tests pin the cheaper forms to what they must
still see: iterating an `nn.Sequential` guards the submodules the loop hands out, not the whole
module tree; a tuple of numbers is checked in one test; inputs must be distinct objects only when
the graph writes one, and torch's tensor check sees that; the hook tables are read from the module's
`__dict__`.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from jitlab.jit import explain_rule, jit


def _same(expected, got):
    assert type(expected) is type(got)
    assert torch.equal(expected, got)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Stack(nn.Module):
    def __init__(self, layers=nn.Sequential):
        super().__init__()
        self.blocks = layers(Block(4), Block(4))

    def forward(self, x):
        for block in self.blocks:
            x = block(x) + 1
        return x


def _jitted_stack(layers=nn.Sequential):
    """A Stack, its jitted form after a first call that equals eager, and the input."""
    torch.manual_seed(0)
    model = Stack(layers)
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 4)
    _same(model(x), jitted(x))
    return model, jitted, x


def test_sequential_iteration_guards_what_the_loop_uses_not_the_whole_tree():
    model, jitted, x = _jitted_stack()
    # a buffer the forward never reads: no new capture (guarding the whole tree recaptured here)
    model.blocks[0].register_buffer("unused", torch.zeros(1))
    _same(model(x), jitted(x))
    assert jitted.explain().captures == 1
    # what the loop does use is still guarded
    model.blocks[1].act = nn.Tanh()
    _same(model(x), jitted(x))
    model.blocks.append(Block(4))
    _same(model(x), jitted(x))
    del model.blocks[0]
    _same(model(x), jitted(x))
    assert jitted.explain().captures == 4
    assert explain_rule(nn.Sequential.__iter__).startswith("native: iteration over torch's module containers")


class Blocks(nn.Sequential):
    """A subclass that keeps torch's own iteration."""


def test_a_sequential_subclass_whose_iteration_changes_is_recaptured():
    model, jitted, x = _jitted_stack(Blocks)
    Blocks.__iter__ = lambda self: iter(list(self._modules.values())[::-1])
    try:
        _same(model(x), jitted(x))
    finally:
        del Blocks.__iter__
    _same(model(x), jitted(x))


class Padded(nn.Module):
    def __init__(self):
        super().__init__()
        self.pads = (1, 1)

    def forward(self, x):
        # str() reads the tuple as a whole, natively: its items' types matter to it
        return x * len(str(self.pads))


def test_a_tuple_of_numbers_is_guarded_by_value_and_item_types():
    model = Padded()
    jitted = jit(model, backend="eager")
    x = torch.ones(2)
    _same(model(x), jitted(x))
    model.pads = tuple([1, 1])  # equal, another object: the same entry serves it
    _same(model(x), jitted(x))
    assert jitted.explain().captures == 1
    model.pads = (True, 1)  # equal to (1, 1), but str() tells them apart
    _same(model(x), jitted(x))
    model.pads = (2, 0)
    _same(model(x), jitted(x))
    assert jitted.explain().captures == 3


def _guard_kinds(jitted):
    return {g.split(":")[0] for entry in jitted.entries for g in entry.guards}


def test_a_graph_writing_an_input_through_a_view_rejects_the_same_tensor_twice():
    def f(a, b):
        a[:2].add_(1)  # writes the input a through a view
        return a + b

    jitted = jit(f, backend="eager")
    _same(f(torch.zeros(3), torch.zeros(3)), jitted(torch.zeros(3), torch.zeros(3)))
    assert "NO_ALIASING" in _guard_kinds(jitted)
    assert "id(" not in jitted.entries[0].source  # the tensor check rejects a repeated tensor itself
    z1, z2 = torch.zeros(3), torch.zeros(3)
    _same(f(z1, z1), jitted(z2, z2))  # b sees the write: 2 where it was written
    assert torch.equal(z1, z2)
    assert jitted.explain().captures == 2


def test_hooks_added_after_the_capture_are_seen():
    model, jitted, x = _jitted_stack()
    handle = model.blocks[1].fc.register_forward_hook(lambda m, args, out: out * 3)
    _same(model(x), jitted(x))
    handle.remove()
    model.blocks[0].register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    _same(model(x), jitted(x))


class Iterated(nn.Module):
    """The ways model code walks a module list besides a plain `for` loop."""

    def __init__(self, form):
        super().__init__()
        self.form = form
        self.blocks = nn.ModuleList([Block(4) for _ in range(3)])

    def forward(self, x):
        if self.form == "enumerate":
            for i, block in enumerate(self.blocks):
                x = block(x) + i
        elif self.form == "list":
            for block in list(self.blocks):
                x = block(x)
        elif self.form == "zip":
            for block, k in zip(self.blocks, (1.0, 2.0, 3.0, 4.0)):
                x = block(x) * k
        elif self.form == "slice":  # transformers: `self.layers[: self.config.num_hidden_layers]`
            for block in self.blocks[:2]:
                x = block(x)
        else:
            try:
                x = self.blocks[3](x)  # past the end, until a block is appended
            except IndexError:
                x = x * 2
        return x


@pytest.mark.parametrize("form", ["enumerate", "list", "zip", "slice", "index_past_end"])
def test_module_lists_walked_by_builtins_or_slices_guard_what_is_used(form):
    """`enumerate(self.blocks)`, `list`, `zip` and `self.blocks[:2]` guard the list's keys and what
    each block taken reads, as a `for` loop does; they guarded the whole module tree, so a buffer
    added to a block recaptured. A block appended, one replaced, or one removed is still seen."""
    torch.manual_seed(0)
    model = Iterated(form)
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 4)
    _same(model(x), jitted(x))
    model.blocks[0].register_buffer("unused", torch.zeros(1))
    _same(model(x), jitted(x))
    assert jitted.explain().captures == 1
    guards = "\n".join(jitted.entries[0].guards)
    if form == "slice":
        assert "_modules['2']" not in guards  # the block the slice leaves out is not read
    model.blocks.append(Block(4))
    _same(model(x), jitted(x))
    model.blocks[1] = Block(4)
    _same(model(x), jitted(x))
    del model.blocks[0]
    _same(model(x), jitted(x))
    # every change recaptured; reading only `self.blocks[3]`, the replaced block 1 does not matter and
    # after the removal the first entry (three blocks: IndexError) serves again
    assert jitted.explain().captures == (2 if form == "index_past_end" else 4)
    assert not jitted.explain().fallbacks


class AllNonEmpty(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Sequential(nn.ReLU()), nn.Sequential(nn.Tanh())])

    def forward(self, x):
        return x * 2 if all(self.stages) else x - 1


def test_all_over_a_module_list_sees_a_submodule_emptied():
    """`all(self.stages)` takes each Sequential's truth (its length) natively: it must still guard
    the whole container, or a stage emptied in place would keep the first result."""
    model = AllNonEmpty()
    jitted = jit(model, backend="eager")
    x = torch.randn(3)
    _same(model(x), jitted(x))
    del model.stages[1][0]
    _same(model(x), jitted(x))


def takes_scale(x: torch.Tensor, scale: float = 2.0) -> torch.Tensor:
    return x * scale


def calls_by_its_code_names(x: torch.Tensor, fn=takes_scale) -> torch.Tensor:
    """What transformers' decorators do: look up a function's parameter names in its code."""
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    if "scale" in names:
        return fn(x, scale=3.0)
    return fn(x)


def test_a_code_objects_attributes_are_fixed_by_its_identity() -> None:
    jitted = jit(calls_by_its_code_names, backend="eager")
    x = torch.randn(3)
    for _ in range(3):
        _same(calls_by_its_code_names(x), jitted(x))
    guards = "\n".join(jitted.explain().graphs[0].guards)
    assert "__code__ is <code" in guards  # the code object, by identity
    assert "co_varnames" not in guards and "co_argcount" not in guards  # and nothing read from it

    def other(x: torch.Tensor, factor: float = 2.0) -> torch.Tensor:
        return x * factor + 1

    # another function: its code fails the identity guard, and the names it has are read anew
    _same(calls_by_its_code_names(x, other), jitted(x, other))
    assert jitted.explain().eager_misses == 0 and sum(g.hits for g in jitted.explain().graphs) == 2


class AsksForAnAttribute(nn.Module):
    """Transformers' attention layers ask `hasattr(self, "num_key_value_groups")`."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if hasattr(self, "scale"):
            y = y * self.scale
        return y


@pytest.mark.parametrize("change", ["instance", "parameter", "buffer", "module", "class"])
def test_a_missing_module_attribute_is_guarded_without_hasattr_and_seen_when_added(change) -> None:
    torch.manual_seed(0)
    model = AsksForAnAttribute()
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 4)
    for _ in range(2):
        _same(model(x), jitted(x))
    guards = "\n".join(jitted.explain().graphs[0].guards)
    assert "has no attribute 'scale'" in guards and "hasattr(" not in guards
    if change == "instance":
        model.scale = 3.0
    elif change == "parameter":
        model.scale = nn.Parameter(torch.full((4,), 2.0))
    elif change == "buffer":
        model.register_buffer("scale", torch.full((4,), 5.0))
    elif change == "module":
        model.scale = nn.Identity()  # `y * module` raises, as it does eagerly
    else:
        type(model).scale = 4.0  # on the class: put back below
    try:
        if change == "module":
            with pytest.raises(TypeError):
                model(x)
            with pytest.raises(TypeError):
                jitted(x)
        else:
            _same(model(x), jitted(x))
            _same(model(x), jitted(x))
    finally:
        if change == "class":
            del type(model).scale
    assert jitted.explain().eager_misses == 0 or change == "module"
