"""Reads whose value the program gets, where a float that changed between captures becomes a graph
input (graph/dynamic_scalars.py): a learning rate a scheduler sets, a temperature passed in; and an
int that changed becomes a symbolic graph input (graph/dynamic_ints.py): a cache's token count."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.graph.dynamic_ints import dynamic_int
from jitlab.jit.graph.dynamic_scalars import dynamic_float
from jitlab.jit.graph.recorder import GraphRecorder
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import Source


class DynamicReads:
    """Mixin of `Tracer`."""

    # provided by the tracer it is mixed into (tracer.py and its other mixins)
    builder: GuardBuilder
    recorder: GraphRecorder
    side_effects: SideEffects
    track: Callable[[object, Source], Any]

    def track_read(self, value: object, source: Source, holder: object = None, key: object = None) -> Any:
        """`track` for a value the program gets from this read of `holder`'s `key` (an argument, an
        attribute, an item, a global, a cell), which may make a float or an int a graph input; other callers of
        `track` guard what native code or a whole read sees, which stays a constant."""
        t = type(value)
        if t is float or t is int:

            def written() -> bool:  # the place holds what the call wrote, not its value at the start
                return self.side_effects.place_written(holder, key)

            make = dynamic_float if t is float else dynamic_int
            dynamic = make(self.recorder, self.builder, source, value, written)
            if dynamic is not None:
                return dynamic
        return self.track(value, source)
