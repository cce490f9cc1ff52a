"""The plan of a cache entry, what the capture decided before any code is generated: `EntryPlan`
(guards, graphs, effects, result), `GraphPlan` (one graph of it), `BreakInfo` (a break between two
graphs), and `MISS`, what an entry returns when its guards fail. codegen.py and
jitlab.jit.breaks.segments turn a plan into the entry's function.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch.fx as fx

from jitlab.jit.graph.data_values import Speculation
from jitlab.jit.graph.shapes import ShapeInfo
from jitlab.jit.reasons import Reason


class _Miss:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISS"


MISS = _Miss()


@dataclass
class GraphPlan:
    """One graph of an entry: the name the entry's code calls it by, to be compiled by the backend."""

    name: str
    gm: fx.GraphModule
    example_inputs: list[Any]
    fake_inputs: list[Any] | None = None  # with symbolic sizes: what the compiler is handed instead


@dataclass(frozen=True)
class BreakInfo:
    """A graph break of an entry: `kind` "call" or "data", why (the message and its kind of obstacle),
    where, and its deopt counter slot."""

    kind: str
    reason: Reason
    where: object  # interpreter.resumption.Where (a stage this one does not import), shown as text
    index: int


@dataclass
class EntryPlan:
    """Everything captured, ready to be rendered once the graphs are compiled."""

    source_lines: list[str]
    namespace: dict[str, Any]
    graphs: list[GraphPlan]
    guards: list[str]
    speculations: list[str] = field(default_factory=list)
    speculation_sites: list[str | None] = field(default_factory=list)  # file:line of each speculation
    checks: list[str] = field(default_factory=list)  # re-checked values whose other outcome raises
    effects: list[str] = field(default_factory=list)
    breaks: list[BreakInfo] = field(default_factory=list)
    shape: ShapeInfo | None = None  # when some input sizes are symbolic
    inference: bool = False  # every operation runs without gradients: compile it for inference
    shape_note: str | None = None  # why sizes stayed static although they changed
    # for merging the entries of both outcomes of a branch on tensor data (branches.py)
    speculation_objects: list[Speculation] = field(default_factory=list)
    branch_problem: str | None = "not a single graph"  # why this entry cannot take part in a merge
    tensor_meta: list[Any] = field(default_factory=list)  # what the tensor guard checks (guards/builder.py)
    # whether the call may run again eagerly after the entry failed halfway (failsafe.py): no replayed
    # effect, no tensor written in place, no random draw and no break's call, as the capture saw
    rerun_safe: bool = False
    # what explains a miss at each line of the first guard block (guards/builder.miss_texts)
    miss_texts: dict[str, str] = field(default_factory=dict)


SHAPE_GUARDS = "        # shape guards"
SHAPE_MARKERS = {"# shape guards"} | {f"# shape guards {k}" for k in range(1, 1000)}


def shape_marker(segment: int) -> str:
    """The line where the guards on symbolic sizes of a segment's inputs go (filled after compiling)."""
    return SHAPE_GUARDS if segment == 0 else f"        # shape guards {segment}"


def specialisations(specs: list[Any]) -> list[str]:
    """The texts of the values an entry is specialised on (a miss on another value recaptures)."""
    return [s.text for s in specs if s.raises is None]


def specialisation_sites(specs: list[Any]) -> list[str | None]:
    """The user's `file:line` of each value of `specialisations(specs)`, None where unknown."""
    return [getattr(s, "where", None) for s in specs if s.raises is None]


def raising_checks(specs: list[Any]) -> list[str]:
    """The texts of the checks whose other outcome raises (see graph.data_values.Speculation.raises)."""
    return [f"{s.text} ({s.raises})" for s in specs if s.raises is not None]
