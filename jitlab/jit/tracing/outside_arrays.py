"""Outside numpy arrays (and other mutable buffers: `array.array`, `bytearray`, `collections.deque`)
read by native code: guarded by their content, and never written unseen.

A numpy array is mutable state whose content the capture cannot see item by item: `W.sum()`,
`np.max(W)`, `W[0]`, `W.tolist()` all run natively, and what they return is fixed into the cache
entry (a float multiplied into the graph, a branch taken). Guarding such an array by identity alone
let an entry serve a call after the program changed `W[0]` between calls: a wrong result. So the
first native read of an outside array in a segment guards its content (dtype, shape and bytes, as a
speculation on an array compares them, see jitlab.jit.graph.numpy_values), and the content is read
again when the segment ends (the capture ends, or a graph break's call starts): if the call changed
it (`W += 1`, `W[1] = 3.0`, a write through a view), the capture is not cached, since the replay
would not repeat that write. Arrays of Python objects have no content key: reading one natively
makes the capture uncacheable. The standard library's mutable buffers are guarded the same way:
an `array.array` or a `bytearray` by its bytes, a `deque` of numbers or strings by its items (a
float by its bits, so `-0.0` and `0.0` differ).

Cost: the guard reads the whole array on every call, like the check of an array speculation.
"""

from __future__ import annotations

import array
import collections
import sys
from typing import Any, Protocol

from jitlab.jit.graph.data_values import bits_key
from jitlab.jit.graph.numpy_values import array_key
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import Source
from jitlab.jit.reasons import ReasonKind


def is_outside_array(value: object) -> bool:
    """Whether `value` is a buffer of values the tracer does not follow item by item: a numpy array
    (subclasses included; no import of numpy here, an array only exists once numpy is imported), an
    `array.array`, a `bytearray` or a `deque`."""
    if isinstance(value, (array.array, bytearray, collections.deque)):
        return True
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)


def content_key(value: object) -> Any:
    """What the guard compares: equal keys mean equal content for any code reading it; None when the
    content cannot be keyed (an array of Python objects, a deque holding other objects)."""
    if isinstance(value, array.array):
        return (type(value), value.typecode, value.tobytes())
    if isinstance(value, bytearray):
        return (type(value), bytes(value))
    if isinstance(value, collections.deque):
        items = tuple(value)
        if not all(type(v) in _KEYED_ITEMS for v in items):
            return None
        return (type(value), value.maxlen, tuple((type(v), bits_key(v)) for v in items))
    key = array_key(value)
    return None if key is None else (type(value), key)


_KEYED_ITEMS = (int, float, bool, str, bytes, type(None))


def _summary(value: object) -> str:
    """A short description of a buffer for the guard's text (never its content: it may be large)."""
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return f"{type(value).__name__} {value.dtype}, shape {tuple(value.shape)}"
    return f"{type(value).__name__} of {len(value)}"


class ArrayTracer(Protocol):
    """What the content guards use of the tracer (its guard builder changes at each graph break, so
    it is read at each guard); tests/jit/test_jit_owned_state.py checks the real one."""

    builder: GuardBuilder

    def problem(self, message: str, kind: ReasonKind) -> None: ...


class OutsideArrays:
    """Owned by the tracer (`tracer.arrays`): content guards of the outside numpy arrays and buffers
    native code reads, and the content each had when guarded in this segment."""

    def __init__(self, tracer: ArrayTracer) -> None:
        self.tracer = tracer
        # id -> (buffer, its source, its content key when first read in this segment)
        self._outside_arrays: dict[int, tuple[Any, Source, Any]] = {}

    def guard_array(self, buffer: object, source: Source) -> None:
        """Native code reads the outside array or buffer `buffer` (read from `source`) for the first
        time in this segment (`deep_track` sees each object once): guard its content."""
        key = content_key(buffer)
        if key is None:
            self.tracer.problem(
                f"native code reads {source.describe()}, a {type(buffer).__name__} of Python objects, "
                "whose content cannot be guarded",
                ReasonKind.UNTRACKED_VALUE,
            )
            return
        self._outside_arrays[id(buffer)] = (buffer, source, key)
        builder = self.tracer.builder
        builder.check(
            source,
            f"{builder.const(content_key, 'CKEY')}({{v}}) == {builder.const(key)}",
            f"content of {{v}} as captured ({_summary(buffer)})",
        )

    def changed_outside_arrays(self) -> list[tuple[Any, Source]]:
        """The outside buffers whose content changed since they were guarded in this segment."""
        return [(b, source) for b, source, key in self._outside_arrays.values() if content_key(b) != key]

    def check_outside_arrays(self) -> None:
        """The segment ends: an outside buffer whose content changed since it was guarded was written
        by the call, which no replay would repeat (nor would the guard, checked before, see it)."""
        for buffer, source in self.changed_outside_arrays():
            self.tracer.problem(
                f"the call changes {source.describe()}, an outside {type(buffer).__name__}: the cache "
                "entry would not repeat the write",
                ReasonKind.SIDE_EFFECT,
            )

    def forget_outside_arrays(self) -> None:
        """A new segment: its reads are guarded anew, after the graph break's call."""
        self._outside_arrays.clear()
