"""Reading the size of an outside dict or set the call has only added keys to
(`COUNTS[k] = COUNTS.get(k, 0) + 1; len(COUNTS)`, `SEEN.add(k); len(SEEN)`).

An outside container read after the call changed it cannot be guarded as it is now: the guards run
before the call (or before the segment, after a graph break), when it held what it held before the
change. For a dict changed only by item writes with literal keys, or a set changed only by `add`s of
literal elements, the size afterwards follows from the state before: the size before, and whether
each key added was already there. Both are guarded on the state before (`len(COUNTS) == 3`,
`(2 in COUNTS) is False`), so `len()` and truth of such a container stay in the cache. Any other
change (`pop`, `del`, `update`, `discard`, a non-literal key) ends this, and reads are not cached,
as before (tracer.py `_guard_after_mutation`). Reads of an added key itself are the call's own value
(tracer.py `load_item`); iterating such a container is not covered.
"""

from __future__ import annotations

from typing import Any

from jitlab.jit.guards.kinds import container_base
from jitlab.jit.guards.sources import hashable_key, is_literal_key, literal


class AddedKeys:
    """Mixin of `Tracer`: outside dicts and sets changed only by added keys in this segment."""

    def init_added_keys(self) -> None:
        # id of an outside dict or set changed only by added literal keys in this segment ->
        # (its size before the first change, {key: whether it was there before it was added})
        self._added_keys: dict[int, tuple[int, dict[Any, tuple[Any, bool]]]] = {}

    def key_addition(self, container: Any, key: Any) -> tuple[int, bool, bool] | None:
        """Before `container` gets `key` (an item write of a dict, `add` of a set): its size, whether
        `key` is there, and whether this is its first change in the segment; None when not a plain
        dict or set or not a literal key."""
        if container_base(type(container)) not in (dict, set) or not is_literal_key(key):
            return None
        first = id(container) not in self._mutated and id(container) not in self._keys_written
        return len(container), key in container, first

    def note_key_added(self, container: Any, key: Any, before: tuple[int, bool, bool] | None) -> None:
        """`container` got `key`; `before` is what `key_addition` said before the change."""
        key_id = id(container)
        if before is None:
            self.forget_added_keys(container)
            return
        size, present, first = before
        if first:
            self._added_keys[key_id] = (size, {})
        entry = self._added_keys.get(key_id)
        if entry is not None:
            entry[1].setdefault(hashable_key(key), (key, present))

    def forget_added_keys(self, container: Any) -> None:
        """`container` was changed by something other than an added key."""
        self._added_keys.pop(id(container), None)

    def guard_added_keys(self, obj: Any) -> bool:
        """For an outside dict or set changed only by added keys: guard its size before and whether
        each added key was there before, and return True; False for any other object."""
        entry = self._added_keys.get(id(obj))
        if entry is None or id(obj) in self._known_content:
            return False
        source = self.source_of(obj)
        if source is None:
            return False
        size, added = entry
        self.builder.length(source, size)
        for key, present in added.values():
            self.builder.expr(source, f"{literal(key, True)} in {{v}}", present)
        return True
