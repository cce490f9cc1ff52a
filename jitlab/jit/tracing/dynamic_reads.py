"""Reads whose value the program gets, where a float that changed between captures becomes a graph
input (graph/dynamic_scalars.py): a learning rate a scheduler sets, a temperature passed in; and an
int that changed becomes a symbolic graph input (graph/dynamic_ints.py): a cache's token count."""

from __future__ import annotations

from typing import Any

from jitlab.jit.graph.dynamic_ints import dynamic_int
from jitlab.jit.graph.dynamic_scalars import dynamic_float
from jitlab.jit.guards.sources import Source


class DynamicReads:
    """Mixin of `Tracer`."""

    def track_read(self, value: Any, source: Source, holder: Any = None, key: Any = None) -> Any:
        """`track` for a value the program gets from this read of `holder`'s `key` (an argument, an
        attribute, an item, a global, a cell), which may make a float or an int a graph input; other callers of
        `track` guard what native code or a whole read sees, which stays a constant."""
        t = type(value)
        if t is float or t is int:

            def written() -> bool:  # the place holds what the call wrote, not its value at the start
                return self.side_effects.place_written(holder, key)  # type: ignore[attr-defined]

            make = dynamic_float if t is float else dynamic_int
            dynamic = make(self.recorder, self.builder, source, value, written)  # type: ignore[attr-defined]
            if dynamic is not None:
                return dynamic
        return self.track(value, source)  # type: ignore[attr-defined]
