"""Reading an outside container after the call changed it (`LOG.append(v); len(LOG)`,
`COUNTS[k] = COUNTS.get(k, 0) + 1; len(COUNTS)`).

An outside container read after the call changed it cannot be guarded as it is now: the guards run
before the call (or before the segment, after a graph break), when it held what it held before the
change. The capture's `SideEffects` (jitlab.jit.effects.pending) remembers what the changes were;
`ReadsAfterWrites` guards what a read may still rely on:

- A plain list changed only by `append` and `extend`: its first `pre` items are those from before
  the call, unmoved, and the rest are what this call appended (the effects replay them in order). A
  read is guarded on the state before: `len(LOG) == pre` and, for items below `pre`, the items
  themselves; an appended item is the call's own value, not guarded.
- A dict changed only by item writes with literal keys, or a set only by `add`s of literal elements:
  its size afterwards follows from the size before and whether each key added was already there.
  Both are guarded on the state before (`len(COUNTS) == 3`, `(2 in COUNTS) is False`), so `len()`
  and truth of such a container stay in the cache. Reads of an added key itself are the call's own
  value (tracer.py `load_item`); iterating such a container is not covered.
- A list, dict or set of scalars (a list or dict may hold tensors too) changed otherwise: its copy
  from before its first other change is guarded item by item on the state before the call
  (`guard_pre_content`); what the call did since follows from it and from the call's own values.

Any other read after a change is not cached (`guard_after_mutation`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from jitlab.jit.effects.pending import SideEffects, content_values
from jitlab.jit.guards.builder import SCALAR_TYPES, GuardBuilder
from jitlab.jit.guards.kinds import container_base
from jitlab.jit.guards.sources import ItemSource, Source, is_constant_key, is_literal_key, literal
from jitlab.jit.reasons import ReasonKind


class GuardedReads(Protocol):
    """What reads after writes need of the tracer: where an object came from, guarding a value read
    from a source, the current segment's guard builder, and noting a problem."""

    @property
    def builder(self) -> GuardBuilder: ...

    def source_of(self, value: object) -> Source | None: ...

    def track(self, value: object, source: Source) -> Any: ...

    def problem(self, message: str, kind: ReasonKind) -> None: ...


class ReadsAfterWrites:
    """The guards of reads of outside containers the call changed, from what `pending` remembers of
    the changes; `reads` is the tracer that guards them."""

    def __init__(self, pending: SideEffects, reads: GuardedReads) -> None:
        self.pending = pending
        self.reads = reads

    def guard_after_mutation(self, obj: object) -> bool:
        """Whether `obj` was changed in this segment (a read of it then guards nothing as it is now):
        its copy from before is guarded when there is one; otherwise the capture is not cached."""
        if self.pending.changed(obj):
            if not self.pending.content_known(obj) and not self.guard_pre_content(obj):
                self.reads.problem(
                    f"reads a {type(obj).__name__} after changing it in the same call", ReasonKind.SIDE_EFFECT
                )
            return True
        return False

    def size_guarded_before(self, obj: object) -> bool:
        """An outside list only appended to, or dict or set only added keys to, in this segment: its
        size follows from the state before, which is guarded."""
        return self.appended_prefix(obj) is not None or self.guard_added_keys(obj)

    def guard_missing_item(self, container: object, key: object, source: Source) -> None:
        """`container[key]` of an outside dict, list or tuple read from `source` raised: guard that
        the key is missing (a dict) or the length (a list or tuple), unless the call's own writes
        decide it (a key it wrote, a container it changed)."""
        base = container_base(type(container))
        builder = self.reads.builder
        if base is dict and is_constant_key(key) and not self.pending.mutated(container):
            builder.expr(source, f"{builder.const(key, 'K')} in {{v}}", False, f"{key!r} in {{v}}")
            return
        if not is_literal_key(key):
            return
        if base is dict and not self.pending.key_written(container, key):
            if not self.pending.mutated(container):
                builder.expr(source, f"{literal(key, True)} in {{v}}", False)
        elif base in (list, tuple) and not self.guard_after_mutation(container):
            builder.length(source, len(container))

    def guard_pre_content(self, obj: object, scalars_only: bool = False) -> bool:
        """A read of `obj` after a change that `appended_prefix` and `guard_added_keys` do not cover:
        guard its copy from before the call (a dict's keys in order and every value, a list's length
        and every item, a set's elements) and return True; False when there is no copy, or, with
        `scalars_only` (for native code that compares the items), when it holds tensors."""
        items = self.pending.pre_content(obj)
        if (
            scalars_only
            and items is not None
            and not all(type(v) in SCALAR_TYPES for v in content_values(items))
        ):
            return False
        if self.pending.pre_guarded(obj):
            return True
        source = self.reads.source_of(obj)
        if items is None or source is None:
            return False
        builder = self.reads.builder
        if type(items) is dict:
            builder.expr(source, "list({v})", list(items))
            for name, value in items.items():
                self.reads.track(value, ItemSource(source, name))
        elif type(items) is set:
            builder.expr(source, "{v}", frozenset(items))
        else:
            builder.length(source, len(items))
            for index, item in enumerate(items):
                self.reads.track(item, ItemSource(source, index))
        self.pending.note_pre_guarded(obj)
        return True

    def guard_added_keys(self, obj: object) -> bool:
        """For an outside dict or set changed only by added keys: guard its size before and whether
        each added key was there before, and return True; False for any other object."""
        entry = self.pending.added_keys(obj)
        if entry is None:
            return False
        source = self.reads.source_of(obj)
        if source is None:
            return False
        size, added = entry
        builder = self.reads.builder
        builder.length(source, size)
        for key, present in added:
            builder.expr(source, f"{literal(key, True)} in {{v}}", present)
        return True

    def appended_prefix(self, obj: object) -> int | None:
        """For an outside list changed only by appends in this segment: guard its length before them
        and return it; None for any other object."""
        pre = self.pending.appended_length(obj)
        if pre is None:
            return None
        source = self.reads.source_of(obj)
        if source is None:
            return None
        self.reads.builder.length(source, pre)
        return pre

    def appended_item(self, container: list, key: int, value: object, pre: int) -> Any:
        """`container[key]` (an int key) of a list appended to: an item from before the call is guarded
        where it was, an appended one is the call's own."""
        index = key + len(container) if key < 0 else key
        if index < pre:
            source = self.reads.source_of(container)
            assert source is not None  # appended_prefix found it
            return self.reads.track(value, ItemSource(source, index))
        return value

    def appended_slice_items(self, container: list, key: slice, pre: int) -> None:
        """`container[a:b]` of a list appended to: guard the items from before the call it takes."""
        source = self.reads.source_of(container)
        assert source is not None  # appended_prefix found it
        for index in range(*key.indices(len(container))):
            if index < pre:
                self.reads.track(container[index], ItemSource(source, index))

    def iter_outside_list(self, obj: list, source: Source) -> Iterator[Any]:
        """Iterate an outside list as a list iterator does: by index over the real list, so a loop
        that changes the list it iterates sees the change, as in eager code. Each item is guarded
        where it was before the call; while the call has only appended to the list (before or during
        the loop), an item past its old length is the call's own; after any other
        change an item is read from the changed list and `guard_after_mutation` keeps the capture
        out of the cache."""
        index = 0
        while index < len(obj):
            item = obj[index]
            pre = self.pending.appended_length(obj)
            if not self.pending.changed(obj) or (pre is not None and index < pre):
                item = self.reads.track(item, ItemSource(source, index))
            elif pre is None:
                self.guard_after_mutation(obj)
            yield item
            index += 1
