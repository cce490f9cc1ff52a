"""`SideEffects`: every pending write of one capture, with one owner.

A captured call may change outside objects. Each change is done at once (the capture's own call is
a faithful execution) and recorded here: as an `Effect` the cache entry replays after the graph, in
program order, and as what a later read of the changed object needs to know. A read after a change
cannot be guarded as the object is now: the guards run before the call (or before the segment,
after a graph break), when it held what it held before. So this object remembers, per segment:

- the attributes and dict keys the call wrote (a read of them is the call's own value);
- the containers it changed otherwise (a read of them is not cached, unless a copy helps);
- the outside lists changed only by `append`/`extend`, with their length before (their first items
  are unmoved: a read is guarded on the state before the call);
- the outside dicts and sets changed only by added literal keys, with their size before and whether
  each key was there (their size follows from the state before);
- copies of small containers of scalars made just before their first other change
  (`note_pre_content`: the whole container if the call had not changed it, a list's first items if
  it had only appended).

It guards nothing itself: the tracer's reads (jitlab.jit.tracing.appended_reads) ask it what a read
after a change may still guard, and guard that. Objects are kept by `id`; the capture keeps them
alive.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.effects.replay import Effect
from jitlab.jit.guards.builder import SCALAR_TYPES
from jitlab.jit.guards.kinds import container_base
from jitlab.jit.guards.sources import hashable_key, is_literal_key

APPENDING_METHODS = ("append", "extend")
# the longest outside list, dict or set whose state before the call is copied at its first change other than an
# append (one guard per item when it is read afterwards)
PRE_CONTENT_LIMIT = 64


class SideEffects:
    """The pending writes of one capture: `effects` (replayed by the cache entry, in program order),
    `places_written` (every outside place written, for the whole capture) and, per segment, what the
    writes mean for later reads (`new_segment` forgets that)."""

    def __init__(self) -> None:
        self.effects: list[Effect] = []
        # outside places written, (kind, holder, key): the driver makes the DataInts left there
        # plain ints after the call (frontend/driver._plain_ints_written)
        self.places_written: list[tuple[str, Any, Any]] = []
        self._attrs_written: set[tuple[int, str]] = set()
        # outside dicts changed only by item writes with literal keys: id -> keys written. A read of
        # another key still sees the value from before the call, which the guards check.
        self._keys_written: dict[int, set[Any]] = {}
        self._mutated: set[int] = set()  # outside containers changed otherwise
        # id of an outside list changed only by appends in this segment -> its length before them
        self._appended: dict[int, int] = {}
        # id of an outside dict or set changed only by added literal keys in this segment ->
        # (its size before the first change, {key: (key, whether it was there before it was added)})
        self._added_keys: dict[int, tuple[int, dict[Any, tuple[Any, bool]]]] = {}
        # id of an outside container of scalars changed otherwise in this segment -> its copy from
        # before the call (a list, dict or set); those whose copy is guarded in this segment
        self._pre_content: dict[int, Any] = {}
        self._pre_guarded: set[int] = set()
        self._known_content: set[int] = set()  # outside objects whose whole content is guarded (breaks)

    def new_segment(self) -> None:
        """A graph break ran code the capture cannot see: the next segment's guards describe the state
        at its start, so what this one changed is forgotten (the effects and places stay)."""
        self._attrs_written.clear()
        self._keys_written.clear()
        self._mutated.clear()
        self._appended.clear()
        self._added_keys.clear()
        self._pre_content.clear()
        self._pre_guarded.clear()

    # ------------------------------------------------------------ effects and places
    def record(self, effect: Effect) -> None:
        """An effect on an outside object, replayed after the graph in this order."""
        self.effects.append(effect)

    def note_place(self, kind: str, holder: object, key: object) -> None:
        """Remember an outside place written (whatever the call writes, even before it reads data: a
        list stored now may get a data-dependent int later)."""
        self.places_written.append((kind, holder, key))

    def place_written(self, holder: object, key: object) -> bool:
        """Whether the call wrote `holder`'s `key` (an attribute name, an item key)."""
        return any(h is holder and k == key for _kind, h, k in self.places_written)

    # ------------------------------------------------------------ what changed in this segment
    def note_attr_written(self, obj: object, name: str) -> None:
        self._attrs_written.add((id(obj), name))

    def attr_written(self, obj: object, name: str) -> bool:
        """Whether `obj.<name>` was written (or deleted) in this segment: a read is the call's value."""
        return (id(obj), name) in self._attrs_written

    def note_key_written(self, container: object, key: object) -> None:
        """An outside dict got an item write with the literal `key`."""
        self._keys_written.setdefault(id(container), set()).add(hashable_key(key))

    def keys_written(self, container: object) -> set[Any] | None:
        """The (hashable) keys written to an outside dict in this segment, or None."""
        return self._keys_written.get(id(container))

    def key_written(self, container: object, key: object) -> bool:
        return hashable_key(key) in self._keys_written.get(id(container), ())

    def note_mutated(self, container: object) -> None:
        """An outside container changed by something other than item writes with literal keys."""
        self._mutated.add(id(container))

    def mutated(self, container: object) -> bool:
        return id(container) in self._mutated

    def changed(self, obj: object) -> bool:
        """Whether `obj` was changed in this segment (mutated, or keys written)."""
        return id(obj) in self._mutated or id(obj) in self._keys_written

    def know_content(self, obj: object) -> None:
        """The whole content of `obj` was guarded (an object adopted at a graph break): what the
        program changes in it afterwards is replayed, so reading it after such a change is exact."""
        self._known_content.add(id(obj))

    def content_known(self, obj: object) -> bool:
        return id(obj) in self._known_content

    # ------------------------------------------------------------ lists only appended to
    def note_list_change(self, owner: object, name: str, before: int) -> None:
        """The call changed the outside container `owner` with method `name`; `before` is its length
        before that change. Called before `note_mutated` records the change."""
        key = id(owner)
        if type(owner) is list and name in APPENDING_METHODS:
            if key not in self._mutated or key in self._appended:
                self._appended.setdefault(key, before)
                return
        self._appended.pop(key, None)

    def forget_appended(self, obj: object) -> None:
        """`obj` was changed by something other than an append."""
        self._appended.pop(id(obj), None)

    def appended_length(self, obj: object) -> int | None:
        """For an outside list changed only by appends in this segment (and whose content is not
        known otherwise): its length before them; None for any other object."""
        if id(obj) in self._known_content:
            return None
        return self._appended.get(id(obj))

    # ------------------------------------------------------------ dicts and sets only added keys to
    def key_addition(self, container: object, key: object) -> tuple[int, bool, bool] | None:
        """Before `container` gets `key` (an item write of a dict, `add` of a set): its size, whether
        `key` is there, and whether this is its first change in the segment; None when not a plain
        dict or set or not a literal key."""
        if container_base(type(container)) not in (dict, set) or not is_literal_key(key):
            return None
        first = id(container) not in self._mutated and id(container) not in self._keys_written
        return len(container), key in container, first

    def note_key_added(self, container: object, key: object, before: tuple[int, bool, bool] | None) -> None:
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

    def forget_added_keys(self, container: object) -> None:
        """`container` was changed by something other than an added key."""
        self._added_keys.pop(id(container), None)

    def added_keys(self, obj: object) -> tuple[int, list[tuple[Any, bool]]] | None:
        """For an outside dict or set changed only by added keys (and whose content is not known
        otherwise): its size before, and each key added with whether it was there before; None for
        any other object."""
        entry = self._added_keys.get(id(obj))
        if entry is None or id(obj) in self._known_content:
            return None
        return entry[0], list(entry[1].values())

    # ------------------------------------------------------------ copies of the content before the call
    def note_pre_content(self, container: object) -> None:
        """`container`, an outside list, dict or set, is about to change: while what it held before the
        call is still known (the call left it alone, or only appended to a list), keep a copy of that
        for a later read. Only numbers, strings and the like are copied (dict keys must be literal)."""
        key = id(container)
        t = type(container)
        if t not in (list, dict, set) or key in self._pre_content:
            return
        if key in self._appended:
            items: list | dict | set = container[: self._appended[key]]
        elif key in self._mutated or key in self._keys_written:
            return  # changed before in a way that loses the state before the call
        else:
            items = t(container)
        if len(items) > PRE_CONTENT_LIMIT or not all(_copyable(v, t) for v in content_values(items)):
            return
        if t is dict and not all(is_literal_key(k) for k in items):
            return
        self._pre_content[key] = items

    def pre_content(self, obj: object) -> Any:
        """The copy of `obj` from before the call (`note_pre_content`), or None."""
        return self._pre_content.get(id(obj))

    def pre_guarded(self, obj: object) -> bool:
        """Whether the copy of `obj` is already guarded in this segment."""
        return id(obj) in self._pre_guarded

    def note_pre_guarded(self, obj: object) -> None:
        self._pre_guarded.add(id(obj))


def _copyable(value: object, container_type: type) -> bool:
    """Whether an item of a container about to change may be kept in its copy from before the call:
    a number, string or the like, or in a list or dict a tensor (guarded as a graph input where it
    was before the call: `RegularLoss` of ParityBench normalises a list argument's tensors in place,
    `x[i] = x[i] / x[i].norm()`, then reads them)."""
    if type(value) in SCALAR_TYPES:
        return True
    return container_type is not set and type(value) in (torch.Tensor, nn.Parameter)


def content_values(items: list | dict | set) -> Iterable[object]:
    """The values of a container's copy: a dict's values, a list's or set's items."""
    return items.values() if type(items) is dict else items
