"""Reading an outside list the call has only appended to (`LOG.append(v); len(LOG)`).

An outside container read after the call changed it cannot be guarded as it is now: the guards run
before the call, when it held what it held before the change. For a plain list changed only by
`append` and `extend`, the state before is known exactly: its first `pre` items are those from before
the call, unmoved, and the rest are what this call appended (the effects replay them in order). So a
read after the appends is guarded on the state before the call: `len(LOG) == pre` and, for items
below `pre`, the items themselves; an appended item is the call's own value, not guarded. Any other
change of the list (`pop`, an item write, `insert`, ...) ends this: reads are then not cached, as
before (tracer.py `_guard_after_mutation`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jitlab.jit.guards.sources import ItemSource

APPENDING_METHODS = ("append", "extend")


class AppendedReads:
    """Mixin of `Tracer`: outside lists changed only by appends in the current segment."""

    def init_appended(self) -> None:
        # id of an outside list changed only by appends in this segment -> its length before them
        self._appended: dict[int, int] = {}

    def note_list_change(self, owner: Any, name: str, before: int) -> None:
        """The call changed the outside container `owner` with method `name`; `before` is its length
        before that change. Called before `_mutated` records the change."""
        key = id(owner)
        if type(owner) is list and name in APPENDING_METHODS:
            if key not in self._mutated or key in self._appended:
                self._appended.setdefault(key, before)
                return
        self._appended.pop(key, None)

    def forget_appended(self, obj: Any) -> None:
        """`obj` was changed by something other than an append."""
        self._appended.pop(id(obj), None)

    def appended_prefix(self, obj: Any) -> int | None:
        """For an outside list changed only by appends in this segment: guard its length before them
        and return it; None for any other object."""
        pre = self._appended.get(id(obj))
        if pre is None or id(obj) in self._known_content:
            return None
        source = self.source_of(obj)
        if source is None:
            return None
        self.builder.length(source, pre)
        return pre

    def appended_item(self, container: Any, key: Any, value: Any, pre: int) -> Any:
        """`container[key]` (an int key) of a list appended to: an item from before the call is guarded
        where it was, an appended one is the call's own."""
        index = key + len(container) if key < 0 else key
        if index < pre:
            return self.track(value, ItemSource(self.source_of(container), index))
        return value

    def appended_slice_items(self, container: Any, key: slice, pre: int) -> None:
        """`container[a:b]` of a list appended to: guard the items from before the call it takes."""
        source = self.source_of(container)
        for index in range(*key.indices(len(container))):
            if index < pre:
                self.track(container[index], ItemSource(source, index))

    def iter_outside_list(self, obj: list, source: Any) -> Iterator[Any]:
        """Iterate an outside list as a list iterator does: by index over the real list, so a loop
        that changes the list it iterates sees the change, as in eager code. Each item is guarded
        where it was before the call; while the call has only appended to the list (before or during
        the loop), an item past its old length is the call's own; after any other
        change an item is read from the changed list and `_guard_after_mutation` keeps the capture
        out of the cache."""
        index = 0
        while index < len(obj):
            item = obj[index]
            changed = id(obj) in self._mutated or id(obj) in self._keys_written
            pre = self._appended.get(id(obj)) if id(obj) not in self._known_content else None
            if not changed or (pre is not None and index < pre):
                item = self.track(item, ItemSource(source, index))
            elif pre is None:
                self._guard_after_mutation(obj)
            yield item
            index += 1

    def deep_track_appended(self, value: Any, pre: int, depth: int) -> None:
        """Native code reads the whole of a list appended to: guard the items from before the call,
        and the content of every item (those appended are guarded only if they are outside objects)."""
        source = self.source_of(value)
        self._deep_done.add(id(value))
        for index, item in enumerate(list(value)):
            if index < pre:
                self.track(item, ItemSource(source, index))
            self.deep_track(item, depth + 1)
