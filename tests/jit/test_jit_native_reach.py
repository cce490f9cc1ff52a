"""Outside values native code reaches through values the call made.

Native code reads whatever it can reach from what it is handed. An outside list or object handed to
it directly is guarded whole; one inside a list, dict or iterator the call made was not, so its
content was baked into the entry: `torch.tensor([MEAN, [0.0, 0.0]])` kept the old `MEAN` after the
program changed it, as did `sum(map(attrgetter("scale"), [obj]))` and `"{c.scale}".format_map(...)`.
Each program runs eagerly and through `jitlab.jit` over calls that change the outside values between
them; the results must be equal on every call, and the entries must still hit."""

from __future__ import annotations

import collections
import inspect
import json
import operator
from collections.abc import Callable

import pytest
import torch

from jitlab.jit import jit

MEAN = [1.0, 2.0]


class Holder:
    def __init__(self) -> None:
        self.scale = 2.0


def tensor_of_nested_lists(x: torch.Tensor, holder: Holder) -> torch.Tensor:
    return x * torch.tensor([MEAN, [1.0, 2.0]])[0]


def mapped_attrgetter(x: torch.Tensor, holder: Holder) -> torch.Tensor:
    return x * sum(map(operator.attrgetter("scale"), [holder, holder]))


def listed_attrgetter(x: torch.Tensor, holder: Holder) -> torch.Tensor:
    return x * sum(list(map(operator.attrgetter("scale"), [holder])))


def enumerated_map(x: torch.Tensor, holder: Holder) -> torch.Tensor:
    """`next` reads nothing of what it steps, but stepping an enumerate over a map runs the map."""
    return x * next(enumerate(map(operator.attrgetter("scale"), [holder])))[1]


def format_map_of_made_dict(x: torch.Tensor, holder: Holder) -> torch.Tensor:
    return x * float("{h.scale}".format_map({"h": holder}))


def json_of_made_dict(x: torch.Tensor, holder: Holder) -> torch.Tensor:
    return x * len(json.dumps({"mean": MEAN}))


def repr_of_made_list(x: torch.Tensor, holder: Holder) -> torch.Tensor:
    return x * len(repr([MEAN, holder.scale]))


def mapped_builtin(x: torch.Tensor, holder: Holder) -> torch.Tensor:
    return x * sum(map(sum, [MEAN, MEAN]))


PROGRAMS = [
    tensor_of_nested_lists,
    mapped_attrgetter,
    listed_attrgetter,
    enumerated_map,
    format_map_of_made_dict,
    json_of_made_dict,
    repr_of_made_list,
    mapped_builtin,
]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_outside_values_inside_made_values_are_guarded(program: Callable) -> None:
    MEAN[:] = [1.0, 2.0]
    holder = Holder()
    jitted = jit(program, backend="eager")
    x = torch.ones(2)
    for step in range(8):
        if step == 3:
            holder.scale = 5.0
        if step == 5:
            MEAN[0] = 13.5  # a longer text too (json, repr)
        assert torch.equal(jitted(x, holder), program(x, holder)), step
    report = jitted.explain()
    assert report.eager_misses == 0
    assert sum(g.hits for g in report.graphs) >= 4  # the entries are kept and hit


def counts_made_list(x: torch.Tensor, holder: Holder) -> torch.Tensor:
    pair = [holder, holder]
    return x * len(pair) + isinstance(pair, list)


def test_a_builtin_that_reads_nothing_guards_nothing_inside() -> None:
    """`len` of a list the call made counts its items and reads none: the holder is not guarded
    whole, and changing it keeps hitting the one entry."""
    holder = Holder()
    jitted = jit(counts_made_list, backend="eager")
    x = torch.ones(2)
    for step in range(4):
        holder.scale = float(step)
        assert torch.equal(jitted(x, holder), counts_made_list(x, holder))
    report = jitted.explain()
    assert report.captures == 1
    assert "scale" not in str(report)


class Inspecting(torch.nn.Module):
    """Hands its block's bound `forward` to native code that only looks at it (transformers'
    output capturing asks `inspect.signature(module.forward)`)."""

    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parameters = inspect.signature(self.block.forward).parameters  # handed a bound method
        return self.block(x) * len(parameters)


def test_a_modules_bound_method_handed_on_does_not_read_the_module_whole() -> None:
    """The module is not guarded whole for it: a buffer added to it keeps the entry."""
    torch.manual_seed(0)
    model = Inspecting()
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert torch.equal(jitted(x), model(x))
        model.block.register_buffer("unused", torch.zeros(1))
        assert torch.equal(jitted(x), model(x))
    report = jitted.explain()
    assert report.captures == 1
    assert sum(g.hits for g in report.graphs) == 1


def output_class() -> type:
    """A model output as transformers makes it: an OrderedDict subclass whose item access is library
    code of its own (compiled from a `<...>` file name, as jitlab.jit tells library code)."""
    source = """
class Output(collections.OrderedDict):
    def __getitem__(self, key):
        return dict(self.items())[key]
"""
    namespace: dict = {"__name__": "output_library", "collections": collections}
    exec(compile(source, "<output library>", "exec"), namespace)
    return namespace["Output"]


Output = output_class()


class Cache:
    def __init__(self) -> None:
        self.keys = torch.ones(2)
        self.unused = 1.0


def lists_output(x: torch.Tensor, cache: Cache) -> torch.Tensor:
    out = Output(cache=cache)
    names, pairs, copied = list(out.keys()), list(out.items()), dict(out)
    return x * out["cache"].keys + len(names) + len(pairs) + len(copied)


def test_an_output_made_in_the_call_hands_its_items_on_unread() -> None:
    """`keys()`, `items()` and `dict(out)` of an output the call made read none of its values: the
    outside cache it holds is not guarded whole (which guarded its tensor a second time, under
    another source, and T5's generate missed every entry), so a change to an attribute the call
    never reads keeps the entry."""
    cache = Cache()
    jitted = jit(lists_output, backend="eager")
    x = torch.randn(2)
    for step in range(4):
        cache.unused = float(step)
        assert torch.equal(jitted(x, cache), lists_output(x, cache)), step
    report = jitted.explain()
    assert report.captures == 1
    assert sum(g.hits for g in report.graphs) == 3
