"""Class statements inside the call are interpreted: the body runs with its namespace as its locals,
its reads of globals are guarded, and the class is made by `type(...)`; TorchDynamo breaks the graph
there. Those whose metaclass or bases run code of their own stay native, as a graph break; a class
made in the call that leaves it is not cached (every call makes a new class).

Before, a function with a class statement ran natively as a whole: a graph break in every call of it
(`corpus/breaks/graph_breaks.py` `opaque_step_in_every_block`: 4 graphs per call, Dynamo 2)."""

from __future__ import annotations

import enum
import sys
from pathlib import Path

import torch
from torch import nn

from jitlab.capture import load_corpora
from jitlab.jit import jit
from jitlab.jit.reasons import ReasonKind

SCALE = 2.0
GRAPH_BREAKS = Path(__file__).resolve().parents[2] / "corpus" / "breaks" / "graph_breaks.py"


def _equal_over_three_calls(model, shape):
    """The jitted model's explain() after three calls with new inputs, each equal to eager's."""
    jitted = jit(model, backend="eager")
    for _ in range(3):
        x = torch.randn(*shape)
        assert torch.equal(jitted(x), model(x))
    return jitted.explain()


def test_a_class_statement_in_every_block_is_one_graph():
    # the break corpus's program (a helper with a class statement called in each of 3 blocks)
    [case] = [c for c in load_corpora([str(GRAPH_BREAKS)]) if c.name == "opaque_step_in_every_block"]
    report = _equal_over_three_calls(case.build_model(), (2, 6))
    assert report.fallbacks == () and report.breaks == ()
    assert len(report.graphs) == 1 and report.graphs[0].hits == 2


def reads_a_global(t):
    class Local:
        scale = SCALE  # read from the module's globals: guarded

        def apply(self, x):
            return x * self.scale

    return Local().apply(t)


def test_what_a_class_body_reads_from_globals_is_guarded(monkeypatch):
    jitted = jit(reads_a_global, backend="eager")
    x = torch.arange(3.0)
    assert torch.equal(jitted(x), x * 2.0)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 5.0)
    assert torch.equal(jitted(x), x * 5.0)


def module_made_in_the_call(t):
    class Base(nn.Module):
        def forward(self, x):
            return x + 1

    class Child(Base):
        def forward(self, x):
            return super().forward(x) * 2  # the __class__ cell the class statement fills

    class Annotated:
        size: int = 3
        temp = 1
        del temp

    return Child()(t) + Annotated.size + len(Annotated.__annotations__)


def test_nested_classes_super_annotations_and_del_in_the_body():
    report = _equal_over_three_calls(module_made_in_the_call, (4,))
    assert report.fallbacks == () and report.breaks == () and report.graphs[0].hits == 2


def data_in_the_body(t):
    class Stats:
        mean = float(t.mean())  # tensor data read in the class body

    return t - Stats.mean


def test_tensor_data_read_in_a_class_body_equals_eager_when_the_data_changes():
    jitted = jit(data_in_the_body, backend="eager")
    for k in range(4):
        x = torch.randn(5) + k
        assert torch.allclose(jitted(x), data_in_the_body(x))


def with_an_enum(t):
    class Mode(enum.Enum):  # metaclass EnumType: runs natively
        DOUBLE = 2

    return t * Mode.DOUBLE.value


class EnumBetweenLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return with_an_enum(torch.relu(self.fc(x))) + 1


def test_a_class_statement_with_a_metaclass_is_a_graph_break():
    report = _equal_over_three_calls(EnumBetweenLayers(), (2, 4))
    assert report.fallbacks == ()
    [reason] = [r for r in report.reasons if r.what == "graph break"]
    assert reason.kind is ReasonKind.UNSUPPORTED_CODE
    assert "a class statement cannot be interpreted (class Mode: the metaclass" in reason.message


def returns_an_object_of_a_local_class(t):
    class Box:
        def __init__(self, value):
            self.value = value

    return Box(t * 2)


def test_a_class_made_in_the_call_that_leaves_it_is_not_cached():
    jitted = jit(returns_an_object_of_a_local_class, backend="eager")
    x = torch.arange(3.0)
    first, second = jitted(x), jitted(x)
    assert torch.equal(first.value, x * 2) and torch.equal(second.value, x * 2)
    assert type(first) is not type(second)  # a new class per call, as in eager code
    assert any("cannot rebuild the class" in f for f in jitted.explain().fallbacks)
