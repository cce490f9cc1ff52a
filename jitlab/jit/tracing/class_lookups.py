"""Guards on what an attribute lookup found in a class rather than in the object read.

`C().factor`, `Options().go(x)`, `self.helper(x)` and a module's `forward` find their value in a
class: the object read is new (made in the call) or the attribute is not its own, so a guard on
the object says nothing about the value. Classes change between calls: `C.factor = 3.0`, a method
replaced on the class (`Model.helper = ...`), a library patching `forward`. A capture that trusted
what its first call found would run the old code or the old constant, a wrong result.

Each lookup is therefore guarded where CPython's lookup found it: the owning class's
`__dict__[name]` (by value or identity, like any read) and the absence of `name` in every class
before it in the method resolution order, where a new attribute would shadow it. Built-in types
cannot change and get no guard; nor do classes made in the call, whose content the interpreter
saw made, nor a class attribute the call itself wrote before reading it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any, Protocol

from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import AttrSource, ConstSource, ItemSource, Source
from jitlab.jit.reasons import ReasonKind

_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: built-in and extension types that cannot change


def immutable_type(klass: type) -> bool:
    """Whether `klass`'s attributes cannot be set or deleted (`int`, `list`, `torch._C` types)."""
    return bool(klass.__flags__ & _IMMUTABLE_TYPE)


def own_attributes(obj: object) -> Any:
    """The object's instance `__dict__`, or None (slots, built-ins); runs no user code."""
    try:
        return object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        return None


class LookupTracer(Protocol):
    """What the class lookup guards use of the tracer (its guard builder changes at each graph break,
    so it is read at each guard); tests/jit/test_jit_owned_state.py checks the real one."""

    builder: GuardBuilder
    side_effects: SideEffects

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def track(self, value: object, source: Source) -> Any: ...

    def instance_dict_source(self, obj: object, source: Source) -> Source: ...

    def is_outside(self, obj: object) -> bool: ...


class ClassLookups:
    """Owned by the tracer (`tracer.class_lookups`): guards for values found in classes (see the
    module docstring), each class and name guarded once per segment."""

    def __init__(self, tracer: LookupTracer) -> None:
        self.tracer = tracer
        self._class_lookups: dict[tuple[type, str], bool] = {}  # guarded this segment

    def new_segment(self) -> None:
        """A graph break ran code the capture cannot see: later lookups are guarded anew."""
        self._class_lookups.clear()

    def class_lookup(self, klass: type, name: str) -> None:
        """Hooks.class_lookup: the interpreter steps into what `klass` holds under `name`."""
        self.guarded_lookup(self.guard_class_lookup, klass, name)

    def guarded_lookup(self, guard: Callable[..., Any], *args: object) -> bool:
        """Run one of the guards below; a failure in it costs the cache entry, never the user's call."""
        try:
            return guard(*args) is not False
        except Exception as exc:
            self.tracer.problem(
                f"internal error while guarding a class lookup: {type(exc).__name__}: {exc}",
                ReasonKind.INTERNAL,
            )
            return True

    def fresh_attr(self, obj: object, name: str) -> None:
        """`guard_fresh_object_attr` run by `guarded_lookup` (a failure costs the cache entry only)."""
        self.guarded_lookup(self.guard_fresh_object_attr, obj, name)

    def class_dict_source(self, klass: type) -> Source:
        """The class's own namespace as a constant of the guard code: the dict behind `klass.__dict__`
        (a class keeps that one dict for its life, and `setattr` on the class changes it), so a check
        is one dict lookup, without making a mappingproxy on every call (`python -m jitlab.jit.overhead`:
        the small module's guard check took 1.9 µs through `klass.__dict__`, 1.7 µs this way)."""
        label = f"{getattr(klass, '__qualname__', '?')}.__dict__"
        proxy = klass.__dict__
        held = gc.get_referents(proxy)
        if len(held) == 1 and type(held[0]) is dict:
            return ConstSource(self.tracer.builder.const(held[0], "D"), label)
        return AttrSource(
            ConstSource(self.tracer.builder.const(klass, "K"), label[: -len(".__dict__")]), "__dict__"
        )

    def guard_class_lookup(self, klass: type, name: str) -> bool:
        """Guard the lookup of `name` along `klass.__mro__`; whether a class there defines it. Done
        once per class and name in a segment (a method read in a loop is one lookup's guards)."""
        key = (klass, name)
        try:
            done = self._class_lookups.get(key)
        except TypeError:  # an unhashable metaclass instance: no memory
            return self._guard_mro(klass, name)
        if done is None:
            done = self._class_lookups[key] = self._guard_mro(klass, name)
        return done

    def _guard_mro(self, klass: type, name: str, after: type | None = None) -> bool:
        """Guard the lookup of `name` along `klass.__mro__` (from the class after `after`, as
        `super(after, obj)` looks); whether a class there defines it."""
        mro = klass.__mro__
        for owner in mro[mro.index(after) + 1 :] if after is not None else mro:
            defined = name in owner.__dict__
            if (
                immutable_type(owner)
                or not self.tracer.is_outside(owner)
                or self.tracer.side_effects.attr_written(owner, name)
            ):
                if defined:
                    return True
                continue
            namespace = self.class_dict_source(owner)
            if defined:
                self.tracer.track(owner.__dict__[name], ItemSource(namespace, name))
                return True
            self.tracer.builder.expr(namespace, f"{name!r} in {{v}}", False)
        return False

    def guard_fresh_object_attr(self, obj: object, name: str) -> None:
        """`obj.<name>` on an object made in the call: guard the part of the lookup done in classes.
        On a `super()` object, the lookup runs along the method resolution order of the object's
        class after the class `super` names (a mixin's `__getattribute__` reached from a config's:
        a method replaced there must be seen, as the guard code that re-ran the whole chain saw it)."""
        if type(obj) is super:
            start = obj.__thisclass__
            owner_class = obj.__self_class__
            if isinstance(owner_class, type) and start in owner_class.__mro__:
                self._guard_mro(owner_class, name, after=start)
            return
        if isinstance(obj, type):
            if not self.guard_class_lookup(obj, name):
                meta = type(obj)
                if not immutable_type(meta):
                    self.guard_class_lookup(meta, name)
            return
        klass = type(obj)
        if immutable_type(klass):
            return
        attrs = own_attributes(obj)
        if type(attrs) is dict and name in attrs:
            return  # the object's own attribute: made or written by the interpreted call
        self.guard_class_lookup(klass, name)

    def guard_method_lookup(self, obj: object, source: Source, name: str) -> bool:
        """`obj.<name>` on an outside object gave a method bound to `obj`: guard that the object does
        not hold `name` itself and what its class holds. False when the object's own `__dict__` holds
        it (a bound method stored on the instance), which the caller guards as a plain value."""
        if isinstance(obj, type):
            self.guard_fresh_object_attr(obj, name)  # a classmethod: the same lookup as a class's
            return True
        klass = type(obj)
        if immutable_type(klass):
            return True
        attrs = own_attributes(obj)
        if type(attrs) is dict:
            if name in attrs:
                return False
            self.tracer.builder.expr(
                self.tracer.instance_dict_source(obj, source), f"{name!r} in {{v}}", False
            )
        self.guard_class_lookup(klass, name)
        return True
