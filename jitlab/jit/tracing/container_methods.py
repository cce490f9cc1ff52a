"""The tracer's calls of methods of lists, dicts, sets and tuples (`LOG.append(v)`, `d.get(k)`).

On a container made in the call they simply run. On an outside container, a method that only reads
guards the container's whole content; one that changes it runs and is recorded as an effect, which a
cached call replays in order. A method whose outcome depends on the items (`pop`, `remove`, `sort`)
is replayed only when the container's content from before the call is known and guarded
(appended_reads.py); any other change of an outside container is not replayed and makes the capture
uncacheable.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Protocol

from jitlab.jit.effects.pending import APPENDING_METHODS, SideEffects
from jitlab.jit.effects.replay import Effect
from jitlab.jit.effects.snapshots import CONSUMING_METHODS, Freezer
from jitlab.jit.guards.builder import SCALAR_TYPES
from jitlab.jit.guards.kinds import CONTAINERS, container_base
from jitlab.jit.guards.sources import Source, is_literal_key
from jitlab.jit.reasons import ReasonKind
from jitlab.jit.tracing.appended_reads import ReadsAfterWrites

REPLAYABLE_METHODS = {
    list: {"append", "extend", "insert", "clear", "reverse"},
    dict: {"update", "clear", "__setitem__"},
    set: {"add", "update", "discard", "clear"},
}
# methods whose outcome depends on the content (what `pop` returns, where `remove` and `sort` move
# items, whether `setdefault` finds its key): replayed when the content before the call is copied and
# guarded (appended_reads.py), with numbers, strings or literal keys as arguments
REPLAYABLE_AFTER_READING = {
    list: {"pop", "remove", "sort"},
    dict: {"pop", "popitem", "setdefault"},
    set: {"remove"},
}
# those of them that compare the items (`remove` looks for an equal item, `sort` orders them): their
# outcome depends on the items' values, so the content must be numbers, strings and the like; `pop`
# and `setdefault` depend only on positions and (literal) keys, so a list or dict of tensors is fine
# (spikingjelly's `Delay`: a queue of past inputs, `self.queue.pop(0)`)
COMPARING_METHODS = {
    list: {"remove", "sort"},
    set: {"remove"},
}
READONLY_METHODS = {
    list: {"index", "count", "copy", "__len__", "__getitem__", "__contains__"},
    dict: {"get", "keys", "values", "items", "copy", "__len__", "__getitem__", "__contains__"},
    set: {"copy", "__len__", "__contains__", "issubset", "issuperset", "union", "intersection", "difference"},
    tuple: {"index", "count", "__len__", "__getitem__", "__contains__"},
}
CONTAINER_TYPES_WITH_METHODS = frozenset(READONLY_METHODS)


def container_method_of(fn: object, owner: object) -> bool:
    """Whether `fn`, bound to `owner`, is a method of a list, dict, set or tuple that
    `ContainerMethods.container_method` models: a built-in method (`LOG.append`), or a slot wrapper
    that only reads (`queue.__len__()`, `x.__contains__(k)`: spikingjelly's `Delay` calls
    `self.queue.__len__()` on a list it has just appended to)."""
    base = container_base(type(owner))
    if base not in CONTAINER_TYPES_WITH_METHODS:
        return False
    if type(fn) is types.BuiltinMethodType:
        return True
    return type(fn) is types.MethodWrapperType and fn.__name__ in READONLY_METHODS[base]


def _plain_argument(value: object) -> bool:
    """A key, index, item or default the replay can pass again as it is: a number, string or literal."""
    return type(value) in SCALAR_TYPES or is_literal_key(value)


class MethodTracer(Protocol):
    """What the container methods use of the tracer; tests/jit/test_jit_owned_state.py checks the
    real one."""

    after_writes: ReadsAfterWrites
    freezer: Freezer
    side_effects: SideEffects

    def deep_track(self, value: object, depth: int = 0) -> None: ...

    def fresh(self, obj: object) -> Any: ...

    def length(self, obj: object) -> int: ...

    def load_item(self, container: object, key: object) -> Any: ...

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def source_of(self, value: object) -> Source | None: ...

    def is_outside(self, obj: object) -> bool: ...

    def run_native(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any: ...


class ContainerMethods:
    """Owned by the tracer (`tracer.container_methods`): methods of containers called by interpreted
    code."""

    def __init__(self, tracer: MethodTracer) -> None:
        self.tracer = tracer

    @staticmethod
    def _one_key_read(owner: object, base: type, source: Source | None, args: tuple, kwargs: dict) -> bool:
        """Whether `owner.get(*args)` reads one literal key of an outside dict (with a source), as
        `owner[key]` would but without `__missing__` (none on the class: `dict.get` never calls it,
        and `load_item` reads items the way `[]` does)."""
        return (
            base is dict
            and source is not None
            and not kwargs
            and 1 <= len(args) <= 2
            and is_literal_key(args[0])
            and getattr(type(owner), "__missing__", None) is None
        )

    def container_method(
        self, fn: types.BuiltinMethodType | types.MethodWrapperType, owner: object, args: tuple, kwargs: dict
    ) -> Any:
        """`owner.name(*args, **kwargs)` for the built-in method `fn` of a list, dict, set or tuple."""
        name = fn.__name__
        t = container_base(type(owner)) or type(owner)
        if not self.tracer.is_outside(owner):
            for value in (*args, *kwargs.values()):
                if type(value) in CONTAINERS:
                    self.tracer.deep_track(value)
            result = self.tracer.run_native(fn, args, kwargs)
            if name == "copy":
                self.tracer.fresh(result)
            return result
        source = self.tracer.source_of(owner)
        if name in READONLY_METHODS.get(t, ()):
            if name == "__len__" and not args and not kwargs:
                return self.tracer.length(owner)  # as len(owner): its length is what is read
            if name == "get" and self._one_key_read(owner, t, source, args, kwargs):
                # one key read, guarded as `owner[key]` or as its absence, not the whole dict (a
                # transformers config's `__dict__.get("_heterogeneity_spec")` on every attribute read)
                try:
                    return self.tracer.load_item(owner, args[0])
                except KeyError:
                    return args[1] if len(args) == 2 else None
            self.tracer.deep_track(owner)
            result = self.tracer.run_native(fn, args, kwargs)
            if name == "copy":
                self.tracer.fresh(result)
            return result
        if source is None:
            self.tracer.problem(
                f"{type(owner).__name__}.{name} on a container of unknown origin", ReasonKind.UNTRACKED_VALUE
            )
        elif name in REPLAYABLE_AFTER_READING.get(t, ()) and not kwargs:
            self.tracer.side_effects.note_pre_content(owner)
            compares = name in COMPARING_METHODS.get(t, ())
            if not all(map(_plain_argument, args)) or not self.tracer.after_writes.guard_pre_content(
                owner, scalars_only=compares
            ):
                self.tracer.problem(
                    f"{type(owner).__name__}.{name} on an outside {t.__name__} whose content before the call"
                    " is not known (items other than numbers and strings, an argument that is not a number, string or literal, or"
                    " changed before in the call)",
                    ReasonKind.SIDE_EFFECT,
                )
        elif name not in REPLAYABLE_METHODS.get(t, ()) or kwargs:
            self.tracer.problem(
                f"{type(owner).__name__}.{name} on an outside container is not replayed",
                ReasonKind.SIDE_EFFECT,
            )
        for value in args:
            if type(value) in CONTAINERS:
                self.tracer.deep_track(value)
        if name in CONSUMING_METHODS:  # the items are copied now: later changes of `args` do not count
            replayed = tuple(self.tracer.freezer.consumed(value, deep=False) for value in args)
        else:
            replayed = tuple(args)
        before = len(owner) if type(owner) is list else 0
        added = (
            self.tracer.side_effects.key_addition(owner, args[0])
            if name == "add" and len(args) == 1
            else None
        )
        if source is not None and name not in APPENDING_METHODS:
            self.tracer.side_effects.note_pre_content(owner)
        result = self.tracer.run_native(fn, args, kwargs)
        self.tracer.side_effects.note_place("owner", owner, None)
        if source is not None:
            self.tracer.side_effects.record(Effect("method", source, name, replayed))
            self.tracer.side_effects.note_list_change(owner, name, before)
            self.tracer.side_effects.note_key_added(owner, args[0] if args else None, added)
            self.tracer.side_effects.note_mutated(owner)
        return result
