"""Python floats read from outside that change between calls become graph inputs (automatic dynamic
scalars), as TorchDynamo's automatic dynamic does for scalars.

The first capture fixes every float it reads with a guard (`opt.param_groups[0]['lr'] == 0.01`).
When a later capture reads another value from the same place (a learning-rate scheduler changed
it), the float becomes an input of the graph: the entry reads it on every call and hands it to the
graph, which computes with it as eager code does (Python arithmetic on it stays in the graph, as for
the floats read from tensor data with the eager backend; see recorder.py). Python code that decides
on it (`if lr > 0`) fixes it again with a guard. So a scheduler changing the learning rate every step
makes two captures, not one per step. A float read after a graph break is an input at once.
explain() notes each float input on its entry. A compiling backend gets it as a 0-d float64 tensor
that the graph reads with `.item()` (frontend/float_inputs.py): a compiler would take a Python
float input as a constant.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch.fx as fx

    from jitlab.jit.graph.recording_tracer import RecordingTracer
    from jitlab.jit.guards.builder import GuardBuilder
    from jitlab.jit.guards.sources import Source

#: how a compiled graph takes a float input (explain()'s note; frontend/float_inputs.py)
COMPILED_FLOATS = (
    "; a compiled graph takes it as a 0-d float64 tensor read with .item() inside the graph, so the "
    "compiler traces the arithmetic on it without fixing its value"
)


@dataclass(frozen=True, eq=False)
class FloatInput:
    """What reading a float input means (the third item of its lazy entry, see
    GraphRecorder.activate): guard it by value in the segment that read it."""

    builder: GuardBuilder
    source: Source
    value: float

    def activate(self) -> None:
        """Python code decided on the float: from now on the entry is specialised on its value."""
        self.builder.equals_match(self.source, self.value)


class ScalarHistory:
    """The floats and ints each outside place (by its description) held in earlier captures of one callable."""

    def __init__(self) -> None:
        self._seen: dict[tuple[type, str], float | int] = {}
        self._changed: set[tuple[type, str]] = set()
        # ints that stay constants whatever they held (a compiled graph with host operations:
        # dynamic_ints.py), with why, for explain()
        self.constant: dict[str, str] = {}

    def note(self, label: str, value: float | int) -> None:
        """A float or an int (dynamic_ints.py) read from `label` in this capture."""
        key = (type(value), label)
        old = self._seen.get(key)
        if old is not None and (old != value or (type(value) is float and old.hex() != value.hex())):
            self._changed.add(key)
        self._seen[key] = value

    def changed(self, label: str, kind: type = float) -> bool:
        """Whether the place `label` held different numbers of type `kind` in earlier captures."""
        return (kind, label) in self._changed


class ScalarHistories(Protocol):
    """Where the numbers of earlier captures are kept (shape_history.py's `ShapeHistory`)."""

    @property
    def scalars(self) -> ScalarHistory: ...


class ScalarRecorder(Protocol):
    """What making a float (or, dynamic_ints.py, an int) read from outside a graph input uses of the
    graph recorder (tracing's BreakRecorder; recorder.py imports this module). tests/jit/
    test_jit_owned_state.py checks that the real recorder has every member."""

    native_depth: int
    lazy: bool
    tracer: RecordingTracer
    lazy_floats: dict[int, tuple[Any, ...]]

    @property
    def history(self) -> ScalarHistories | None: ...

    def lazy_entry(self, value: object) -> tuple[Any, ...] | None: ...

    def new_placeholder(self, label: str) -> fx.Node: ...


def dynamic_float(
    recorder: ScalarRecorder, builder: GuardBuilder, source: Source, value: float, written: Callable[[], bool]
) -> float | None:
    """The float the program gets for `value` read from `source`, kept as a graph input, or None
    when it stays a guarded constant (first sight, unchanged, not finite, graphs compiled, a value
    the graph computed already, or a place the call wrote before: `written()`; the input is the
    value the place holds when the call starts)."""
    history = getattr(recorder.history, "scalars", None) if recorder.history is not None else None
    if history is None:
        return None
    label = source.describe()
    history.note(label, value)
    # after a graph break a float is an input at once: the break's native code may have changed it
    # (a scheduler's learning rate), and a guard on it would resume the call from the break every time
    changed = history.changed(label) or getattr(recorder, "segment", 0) > 0
    if recorder.native_depth or not changed or not math.isfinite(value):
        return None
    if recorder.lazy_entry(value) is not None or written():
        return None
    why = "it changed between calls" if history.changed(label) else "read after a graph break"
    note = f"{label} is a graph input ({why}{'' if recorder.lazy else COMPILED_FLOATS})"
    if note not in recorder.tracer.notes:
        recorder.tracer.notes.append(note)
    copy = value * 1.0  # the same value, an object of its own: the recorder maps it to its node by id
    node = recorder.new_placeholder(label)
    node.meta["example_value"] = value
    node.meta["jit_var"] = builder.var(source)
    node.meta["jit_segment"] = getattr(recorder, "segment", 0)  # the guard block that reads it
    builder.check(source, "type({v}) is float", "type({v}) is float")
    recorder.lazy_floats[id(copy)] = (copy, node, FloatInput(builder, source, value), ())
    return copy


def only_float_inputs(entry: tuple, depth: int = 0) -> bool:
    """Whether a lazy number (a recorder entry) is a float input or arithmetic on float inputs only:
    Python deciding on it reads outside values, not tensor data, so guarding them is enough."""
    _value, _node, index, parents = entry
    if type(index) is FloatInput:
        return True
    return (
        index is None
        and bool(parents)
        and depth < 8
        and all(only_float_inputs(p, depth + 1) for p in parents)
    )
