"""Reads whose value the program gets, where a float that changed between captures becomes a graph
input (graph/dynamic_scalars.py): a learning rate a scheduler sets, a temperature passed in; and an
int that changed becomes a symbolic graph input (graph/dynamic_ints.py): a cache's token count."""

from __future__ import annotations

from typing import Any, Protocol

from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.graph.dynamic_ints import IntRecorder, dynamic_int
from jitlab.jit.graph.dynamic_scalars import dynamic_float
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import Source


class DynamicTracer(Protocol):
    """What the dynamic reads use of the tracer (its guard builder changes at each graph break, so it
    is read at each read); tests/jit/test_jit_owned_state.py checks the real one."""

    builder: GuardBuilder
    side_effects: SideEffects

    @property
    def recorder(self) -> IntRecorder: ...  # what dynamic_int asks, a superset of dynamic_float's

    def track(self, value: object, source: Source) -> Any: ...


class DynamicReads:
    """Owned by the tracer (`tracer.dynamic_reads`): reads that may make a float or an int a graph
    input."""

    def __init__(self, tracer: DynamicTracer) -> None:
        self.tracer = tracer

    def track_read(self, value: object, source: Source, holder: object = None, key: object = None) -> Any:
        """`track` for a value the program gets from this read of `holder`'s `key` (an argument, an
        attribute, an item, a global, a cell), which may make a float or an int a graph input; other callers of
        `track` guard what native code or a whole read sees, which stays a constant."""
        tracer = self.tracer
        t = type(value)
        if t is float or t is int:

            def written() -> bool:  # the place holds what the call wrote, not its value at the start
                return tracer.side_effects.place_written(holder, key)

            make = dynamic_float if t is float else dynamic_int
            dynamic = make(tracer.recorder, tracer.builder, source, value, written)
            if dynamic is not None:
                return dynamic
        return tracer.track(value, source)
