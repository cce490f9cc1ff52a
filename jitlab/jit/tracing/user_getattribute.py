"""Attribute reads on an object whose class defines `__getattribute__` or `__getattr__` in Python.

A transformers config (`PreTrainedConfig`) is the common case: its `__getattribute__` maps names
through `attribute_map`, and a mixin's `__getattribute__` looks for `_heterogeneity_spec` in the
instance `__dict__`, before `super().__getattribute__(key)` reads the attribute. The capture runs
those methods interpreted, so every read they make is guarded where it happened. What this module
adds is the right source for the read they end with, `object.__getattribute__(obj, key)`:

- the read is guarded as that call (`GenericAttrSource`), not as `obj.key`, which in the guard
  code would run the class's Python `__getattribute__` again on every call (a T5 decoder step read
  its config's attributes through transformers' methods about 900 times);
- an attribute the object holds in its instance dict is read there, as `d['key']` with `d` the
  instance dict fetched once by `object.__getattribute__(obj, '__dict__')`, when that is provably
  the same read: the object's exact class is guarded (its identity or type check), and no class of
  its method resolution order defines `key` (a data descriptor there, such as a property, comes
  first; guarded per class and name, as any class lookup);
- the value the user's `__getattribute__` returns is not guarded again as `obj.key`: its reads are.

So a config is guarded by the attributes the call read, each where it lives, and by its whole
`__dict__` only where the call used the dict as a whole (`vars(config)`, `config.to_dict()`).
"""

from __future__ import annotations

from typing import Any, Protocol

from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import AttrSource, GenericAttrSource, Source
from jitlab.jit.interpreter import Interpreter
from jitlab.jit.reasons import ReasonKind
from jitlab.jit.tracing.class_lookups import ClassLookups, immutable_type, own_attributes
from jitlab.jit.tracing.lookasides import Specials


class AttributeTracer(Protocol):
    """What the reads through Python attribute methods use of the tracer (its guard builder changes
    at each graph break, so it is read at each guard); tests/jit/test_jit_owned_state.py checks the
    real one."""

    builder: GuardBuilder
    class_lookups: ClassLookups
    side_effects: SideEffects
    specials: Specials

    @property
    def interpreter(self) -> Interpreter | None: ...

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def source_of(self, value: object) -> Source | None: ...

    def tracked_attr(self, obj: object, name: str, value: object, generic: bool = False) -> Any: ...

    def is_outside(self, obj: object) -> bool: ...


class UserAttributeReads:
    """Owned by the tracer (`tracer.attribute_reads`): reads of attributes that go through a class's
    Python attribute methods."""

    def __init__(self, tracer: AttributeTracer) -> None:
        self.tracer = tracer

    def has_user_getattribute(self, obj: object) -> bool:
        """Whether `obj.name` runs a `__getattribute__` written in Python (so does guard code)."""
        return self.tracer.specials.method(type(obj), "__getattribute__") is not None

    def load_attr_through_user_code(
        self, obj: object, name: str, getattribute: object, getattr_: object
    ) -> Any:
        """Attribute access on an object whose class defines `__getattribute__` or `__getattr__` in
        Python (an `EasyDict`, a config wrapper): those run interpreted, as CPython would call them.
        What an interpreted `__getattribute__` returns is what its reads made of the object, and each
        of those reads is guarded (the last one, `object.__getattribute__(obj, name)`, by
        `generic_attr_source`), so the result gets no guard of its own as `obj.name`."""
        assert self.tracer.interpreter is not None
        try:
            if getattribute is not None:
                return self.tracer.interpreter.call(getattribute, (obj, name), {})
            # the lookup CPython tries before __getattr__ (the type's own __getattribute__)
            value = type(obj).__getattribute__(obj, name)
        except AttributeError:
            if getattr_ is None:
                raise
            source = self.tracer.source_of(obj)
            if getattribute is None and source is not None and self.tracer.is_outside(obj):
                if type(own_attributes(obj)) is dict:  # still falls through to __getattr__
                    self.tracer.builder.expr(source, f"{name!r} in {{v}}.__dict__", False)
            return self.tracer.interpreter.call(getattr_, (obj, name), {})
        return self.tracer.tracked_attr(obj, name, value)

    def generic_read(self, obj: object, name: str) -> Any:
        """`object.__getattribute__(obj, name)` called by interpreted code (`super().__getattribute__(
        name)` at the end of a user `__getattribute__`), read and guarded as that call. A property
        written in Python that the lookup finds (a config's `output_attentions`, `use_return_dict`)
        is run interpreted, as the call would run it: its reads are guarded where they happen,
        and the guard code does not run it again."""
        if not self.has_user_getattribute(obj):
            return self.tracer.tracked_attr(obj, name, object.__getattribute__(obj, name))
        getter = self._python_property_getter(type(obj), name)
        if getter is not None:
            assert self.tracer.interpreter is not None
            return self.tracer.interpreter.call(getter, (obj,), {})
        try:
            value = object.__getattribute__(obj, name)
        except AttributeError:
            self._guard_generic_missing(obj, name)  # `getattr(config, "x", None)`, `hasattr`
            raise
        return self.tracer.tracked_attr(obj, name, value, True)

    def _guard_generic_missing(self, obj: object, name: str) -> None:
        """`object.__getattribute__(obj, name)` raised AttributeError: guard that it still would,
        that the instance dict lacks `name` and no class of the method resolution order defines it
        (the program may catch the error and go another way: `getattr(config, "x", None)`). A class
        that does define it holds a descriptor that raised (an unset slot): not guarded, so the
        capture is not kept."""
        source = self.tracer.source_of(obj)
        if source is None or not self.tracer.is_outside(obj):
            self.tracer.class_lookups.fresh_attr(obj, name)
            return
        if self.tracer.side_effects.attr_written(obj, name):
            return  # deleted or never written by the call itself: its writes decide
        own = own_attributes(obj)
        if type(own) is dict:
            self.tracer.builder.expr(self.instance_dict_source(obj, source), f"{name!r} in {{v}}", False)
        if self.tracer.class_lookups.guarded_lookup(
            self.tracer.class_lookups.guard_class_lookup, type(obj), name
        ):
            self.tracer.problem(
                f"object.__getattribute__ of {name!r} on a {type(obj).__name__} raised from its class's"
                " descriptor",
                ReasonKind.UNTRACKED_VALUE,
            )

    def _python_property_getter(self, cls: type, name: str) -> Any:
        """The getter of the `property` the lookup of `name` on `cls` finds first, when it is a
        Python function the interpreter steps into, with the lookup guarded (the property object in
        its class, nothing before it); else None."""
        for klass in cls.__mro__:
            if name in klass.__dict__:
                found = klass.__dict__[name]
                if type(found) is not property or not self.tracer.specials.user_callable(found.fget):
                    return None
                self.tracer.class_lookups.guarded_lookup(
                    self.tracer.class_lookups.guard_class_lookup, cls, name
                )
                return found.fget
        return None

    def instance_dict_source(self, obj: object, source: Source) -> Source:
        """The source of `obj`'s instance dict: `obj.__dict__`, or `object.__getattribute__(obj,
        '__dict__')` when the former would run the class's Python `__getattribute__`."""
        if self.has_user_getattribute(obj):
            return GenericAttrSource(
                source, "__dict__", self.tracer.builder.const(object.__getattribute__, "GA")
            )
        return AttrSource(source, "__dict__")

    def generic_attr_source(self, obj: object, source: Source, name: str) -> Source:
        """The source of `object.__getattribute__(obj, name)` on an outside object at `source`: read
        in the instance dict when the guards make that the same read (module docstring), else by
        the call itself, which runs no Python `__getattribute__` but does run a property."""
        attr = GenericAttrSource(source, name, self.tracer.builder.const(object.__getattribute__, "GA"))
        own = own_attributes(obj)
        if type(own) is dict and name in own and self.tracer.builder.type_fixed(source):
            cls = type(obj)
            if _instance_dict_wins(cls, name):
                # guards what the classes hold under `name`: nothing, or the value seen (a dataclass
                # field's default, `return_dict = True`), and nothing in the classes before it
                self.tracer.class_lookups.guarded_lookup(
                    self.tracer.class_lookups.guard_class_lookup, cls, name
                )
                self.tracer.builder.read_through_instance_dict(attr, self.instance_dict_source(obj, source))
        return attr


def _instance_dict_wins(cls: type, name: str) -> bool:
    """Whether `object.__getattribute__` on an instance of `cls` holding `name` in its instance dict
    returns that item: no class of the method resolution order defines `name`, or the first that does
    holds a value of a built-in type that is no data descriptor (a field's default: an int, a string,
    None; a function). A data descriptor there (a property, a slot) would come first; a value of a
    class statement's type could become one (its class gains `__set__`), so it is read by the call."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            kind = type(klass.__dict__[name])
            return immutable_type(kind) and not hasattr(kind, "__set__") and not hasattr(kind, "__delete__")
    return True
