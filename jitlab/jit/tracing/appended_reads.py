"""Reading an outside list the call has only appended to (`LOG.append(v); len(LOG)`).

An outside container read after the call changed it cannot be guarded as it is now: the guards run
before the call, when it held what it held before the change. For a plain list changed only by
`append` and `extend`, the state before is known exactly: its first `pre` items are those from before
the call, unmoved, and the rest are what this call appended (the effects replay them in order). So a
read after the appends is guarded on the state before the call: `len(LOG) == pre` and, for items
below `pre`, the items themselves; an appended item is the call's own value, not guarded. Any other
change of the list (`pop`, an item write, `insert`, a slice deleted, ...) ends this.

A list, dict or set of scalars (a list or dict may hold tensors too) is then still readable: before
its first other change, the tracer keeps a copy of what it held before the call (`note_pre_content`:
the whole container if the call had not changed it, a list's first `pre` items if it had only
appended). A read after the change guards that copy, item by item, on the state before the call
(`guard_pre_content`); what the call did to the container since follows from it and from the call's
own values, which the effects replay in order. Containers of other objects, or longer than
`PRE_CONTENT_LIMIT`, are not copied: a read after such a change is not cached (tracer.py
`_guard_after_mutation`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.guards.builder import SCALAR_TYPES
from jitlab.jit.guards.sources import ItemSource, is_literal_key

APPENDING_METHODS = ("append", "extend")
# the longest outside list, dict or set whose state before the call is copied at its first change other than an
# append (one guard per item when it is read afterwards)
PRE_CONTENT_LIMIT = 64


class AppendedReads:
    """Mixin of `Tracer`: outside lists changed only by appends in the current segment."""

    def init_appended(self) -> None:
        # id of an outside list changed only by appends in this segment -> its length before them
        self._appended: dict[int, int] = {}
        # id of an outside container of scalars changed otherwise in this segment -> its copy from
        # before the call (a list, dict or set)
        self._pre_content: dict[int, Any] = {}
        self._pre_guarded: set[int] = set()  # those whose copy is guarded in this segment

    def clear_appended(self) -> None:
        """A new segment: its guards describe the state at its start."""
        self._appended.clear()
        self._pre_content.clear()
        self._pre_guarded.clear()

    def note_pre_content(self, container: Any) -> None:
        """`container`, an outside list, dict or set, is about to change: while what it held before the
        call is still known (the call left it alone, or only appended to a list), keep a copy of that
        for a later read. Only numbers, strings and the like are copied (dict keys must be literal)."""
        key = id(container)
        t = type(container)
        if t not in (list, dict, set) or key in self._pre_content:
            return
        if key in self._appended:
            items: Any = container[: self._appended[key]]
        elif key in self._mutated or key in self._keys_written:
            return  # changed before in a way that loses the state before the call
        else:
            items = t(container)
        if len(items) > PRE_CONTENT_LIMIT or not all(_copyable(v, t) for v in _values(items)):
            return
        if t is dict and not all(is_literal_key(k) for k in items):
            return
        self._pre_content[key] = items

    def guard_pre_content(self, obj: Any, scalars_only: bool = False) -> bool:
        """A read of `obj` after a change that `appended_prefix` and `guard_added_keys` do not cover:
        guard its copy from before the call (a dict's keys in order and every value, a list's length
        and every item, a set's elements) and return True; False when there is no copy, or, with
        `scalars_only` (for native code that compares the items), when it holds tensors."""
        key = id(obj)
        items = self._pre_content.get(key)
        if scalars_only and items is not None and not all(type(v) in SCALAR_TYPES for v in _values(items)):
            return False
        if key in self._pre_guarded:
            return True
        source = self.source_of(obj)
        if items is None or source is None:
            return False
        if type(items) is dict:
            self.builder.expr(source, "list({v})", list(items))
            for name, value in items.items():
                self.track(value, ItemSource(source, name))
        elif type(items) is set:
            self.builder.expr(source, "{v}", frozenset(items))
        else:
            self.builder.length(source, len(items))
            for index, item in enumerate(items):
                self.track(item, ItemSource(source, index))
        self._pre_guarded.add(key)
        return True

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


def _copyable(value: Any, container_type: type) -> bool:
    """Whether an item of a container about to change may be kept in its copy from before the call:
    a number, string or the like, or in a list or dict a tensor (guarded as a graph input where it
    was before the call: `RegularLoss` of ParityBench normalises a list argument's tensors in place,
    `x[i] = x[i] / x[i].norm()`, then reads them)."""
    if type(value) in SCALAR_TYPES:
        return True
    return container_type is not set and type(value) in (torch.Tensor, nn.Parameter)


def _values(items: Any) -> Any:
    """The values of a container's copy: a dict's values, a list's or set's items."""
    return items.values() if type(items) is dict else items
