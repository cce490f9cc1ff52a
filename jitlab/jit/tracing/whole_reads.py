"""The tracer's reads of a whole outside object: native code handed a container, a plain object or a
module may read any of its content, so all of it is guarded (items, attributes, a module's parameters,
buffers and submodules), down to a few levels; a numpy array, deque, `array.array` or `bytearray` by
its content (outside_arrays.py). What cannot be guarded that way (a set of objects, a
dict with keys that are neither literals nor constants, deeper nesting) makes the capture uncacheable.
"""

from __future__ import annotations

import functools
import types
import weakref
from collections.abc import Callable
from enum import Enum
from typing import Any, Protocol

import torch
import torch.nn as nn

from jitlab.jit.guards.builder import SCALAR_TYPES, GuardBuilder
from jitlab.jit.guards.kinds import class_member, container_base, has_slots, plain_object, slot_names
from jitlab.jit.guards.sources import (
    AttrSource,
    BaseItemSource,
    ConstKeySource,
    ItemSource,
    ReferentSource,
    Source,
    is_constant_key,
    is_literal_key,
)
from jitlab.jit.reasons import ReasonKind
from jitlab.jit.tracing.appended_reads import ReadsAfterWrites
from jitlab.jit.tracing.outside_arrays import OutsideArrays, is_outside_array

#: item types a tuple may hold to be guarded in one check (builder.scalar_tuple): equal values of
#: these types behave alike; floats do not (-0.0 == 0.0, nan != nan)
EXACT_SCALARS = (int, bool, str, type(None))


class InstanceDicts(Protocol):
    """Where an object's instance dict is read from (user_getattribute.UserAttributeReads)."""

    def has_user_getattribute(self, obj: object) -> bool: ...

    def instance_dict_source(self, obj: object, source: Source) -> Source: ...


class ClassLookupGuards(Protocol):
    """The guards of what a class holds under a name (class_lookups.ClassLookups)."""

    def guarded_lookup(self, guard: Callable[..., Any], *args: object) -> bool: ...

    def guard_class_lookup(self, klass: type, name: str) -> bool: ...


class WholeTracer(Protocol):
    """What the whole reads use of the tracer (its guard builder changes at each graph break, so it
    is read at each guard); tests/jit/test_jit_owned_state.py checks the real one."""

    after_writes: ReadsAfterWrites
    arrays: OutsideArrays
    attribute_reads: InstanceDicts
    builder: GuardBuilder
    class_lookups: ClassLookupGuards

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def source_of(self, value: object) -> Source | None: ...

    def track(self, value: object, source: Source) -> Any: ...

    def is_outside(self, obj: object) -> bool: ...


class WholeReads:
    """Owned by the tracer (`tracer.whole_reads`): guarding the whole content of an outside object
    read as a whole, once per object in a segment."""

    def __init__(self, tracer: WholeTracer) -> None:
        self.tracer = tracer
        self._deep_done: set[int] = set()  # guarded whole in this segment
        self._table_sources: dict[tuple[Source, str, str], Source] = {}  # see _table_source

    def new_segment(self) -> None:
        """A graph break ran code the capture cannot see: later whole reads are guarded anew."""
        self._deep_done.clear()

    def deep_track(self, value: object, depth: int = 0) -> None:
        """An outside container is read as a whole by native code: guard all of its content."""
        try:
            self._deep_track(value, depth)
        except Exception as exc:
            self.tracer.problem(
                f"internal error while guarding a {type(value).__name__}: {type(exc).__name__}: {exc}",
                ReasonKind.INTERNAL,
            )

    def _deep_track(self, value: object, depth: int) -> None:
        source = self.tracer.source_of(value)
        if source is None or not self.tracer.is_outside(value) or id(value) in self._deep_done:
            return
        if depth > 4:
            self.tracer.problem(
                "a deeply nested outside value is read as a whole by native code", ReasonKind.UNTRACKED_VALUE
            )
            return
        pre = self.tracer.after_writes.appended_prefix(value)
        if pre is not None:
            self._deep_track_appended(value, pre, depth)
            return
        if self.tracer.after_writes.guard_after_mutation(value):
            return
        self._deep_done.add(id(value))
        if is_outside_array(value):
            self.tracer.arrays.guard_array(value, source)
            return
        t = container_base(type(value)) or type(value)
        if t in (set, frozenset):
            if all(type(v) in SCALAR_TYPES for v in value):
                self.tracer.builder.expr(source, "{v}", frozenset(value))
            else:
                self.tracer.problem(
                    "a set of non-scalar values is read as a whole by native code", ReasonKind.UNTRACKED_VALUE
                )
        elif type(value) is tuple and len(value) <= 16 and all(type(v) in EXACT_SCALARS for v in value):
            self.tracer.builder.scalar_tuple(source, value)
        elif t in (list, tuple):
            self.tracer.builder.length(source, len(value))
            for i, item in enumerate(value):
                self.tracer.track(item, ItemSource(source, i))
                self.deep_track(item, depth + 1)
        elif t is dict:
            if not all(is_literal_key(k) or is_constant_key(k) for k in value):
                self.tracer.problem(
                    "a dict with keys that are neither literals nor constants is read as a whole",
                    ReasonKind.UNTRACKED_VALUE,
                )
                return
            self.tracer.builder.expr(source, "list({v})", list(value))
            for key, item in value.items():
                if is_literal_key(key):
                    self.tracer.track(item, self._table_source(source, "item", key))
                else:
                    self.tracer.track(item, self.constant_key_source(source, key))
                self.deep_track(item, depth + 1)
        elif isinstance(value, nn.Module):
            self._deep_track_module(value, source, depth)
        elif isinstance(value, (dict, list, tuple, set, frozenset)):
            self._deep_track_own_access(value, source, depth)
        elif isinstance(value, weakref.ref):  # what it refers to (a WeakValueDictionary's items)
            referent = value()
            self.tracer.track(referent, ReferentSource(source))
            self.deep_track(referent, depth + 1)
        elif isinstance(value, functools.partial):
            # what calling it reads: its function, arguments and keywords (`max(.., key=partial(
            # operator.getitem, TABLE))` reads TABLE), which its instance dict does not hold
            for name in ("func", "args", "keywords"):
                part = getattr(value, name)
                self.tracer.track(part, self._table_source(source, "attr", name))
                self.deep_track(part, depth + 1)
        # a plain object's attributes, or those of a user subclass of a container (an EasyDict's)
        if t is not type(value):
            wants_attrs = type(value).__module__ not in ("builtins", "collections")
        else:
            wants_attrs = plain_object(value)
        if wants_attrs:
            attrs = getattr(value, "__dict__", None)
            if type(attrs) is dict and not isinstance(value, nn.Module):
                # guarded as the instance dict's items, which is what was read: `obj.name` could
                # be a property's value instead, and on a class with a Python `__getattribute__`
                # (a transformers config) would run that method per attribute on every call
                for table, items in self._instance_dict_sources(value, attrs, source):
                    self.tracer.builder.expr(table, "list({v})", list(items))
                    for name, item in items.items():
                        self.tracer.track(item, self._table_source(table, "item", name))
                        self.deep_track(item, depth + 1)
        if t is type(value) and has_slots(value):
            self._deep_track_slots(value, slot_names(type(value)), source, depth)

    def _instance_dict_sources(self, value: object, attrs: dict, source: Source) -> list[tuple[Source, dict]]:
        """Where the guards read `value`'s instance dict, and its items: `attrs` is
        `value.__dict__` as Python code gets it. Through `object.__getattribute__` when the class
        has no Python `__getattribute__`, or one that gives that same dict (guarded unchanged in
        the classes). A `__getattribute__` that gives another dict for `__dict__` leaves two
        readings: native code reads either (`vars()` goes through that method, `copy.copy`'s
        `__reduce_ex__` takes the instance dict itself), so both dicts are guarded."""
        reads = self.tracer.attribute_reads
        if not reads.has_user_getattribute(value):
            return [(reads.instance_dict_source(value, source), attrs)]
        instance_dict = object.__getattribute__(value, "__dict__")
        if instance_dict is not attrs:
            mapped = self._table_source(source, "attr", "__dict__")
            return [(mapped, attrs), (reads.instance_dict_source(value, source), instance_dict)]
        lookups = self.tracer.class_lookups
        lookups.guarded_lookup(lookups.guard_class_lookup, type(value), "__getattribute__")
        return [(reads.instance_dict_source(value, source), attrs)]

    def _deep_track_own_access(self, value: object, source: Source, depth: int) -> None:
        """A subclass of a built-in container whose item access is Python code (`Counter`, a class
        that computes `__getitem__`): native code reads the items the base type holds (`json.dumps`,
        `sum(c.values())`), so a dict's keys and items are guarded as that base reads them
        (`dict.keys`, `dict.__getitem__`), running none of the class's code on a hit. Other such
        containers make the capture uncacheable."""
        builder = self.tracer.builder
        if not isinstance(value, dict) or not all(is_literal_key(k) for k in dict.keys(value)):
            self.tracer.problem(
                f"a {type(value).__name__} (a container class with item access of its own) is read as "
                "a whole by native code",
                ReasonKind.UNTRACKED_VALUE,
            )
            return
        if not builder.type_fixed(source):
            builder.type_match(source, value)
        keys = builder.const(dict.keys, "DK")
        builder.expr(source, f"list({keys}({{v}}))", list(dict.keys(value)))
        getter = builder.const(dict.__getitem__, "DG")
        for key, item in dict.items(value):
            self.tracer.track(item, BaseItemSource(source, key, getter))
            self.deep_track(item, depth + 1)

    def _deep_track_slots(self, value: object, names: list[str], source: Source, depth: int) -> None:
        """Native code that reads an object whole reads its slots too (`copy.copy`'s
        `__reduce_ex__` gets each by name and leaves out those unset): each is guarded as
        `obj.name`, what that read gets, or as missing. Read here through the slot itself, so that
        guarding runs none of the program's code; a slot behind a property or a Python
        `__getattribute__` makes the capture uncacheable."""
        cls = type(value)
        slots = [class_member(cls, name) for name in names]
        if self.tracer.attribute_reads.has_user_getattribute(value) or any(
            type(slot) is not types.MemberDescriptorType for slot in slots
        ):
            self.tracer.problem(
                f"an object of class {cls.__qualname__} is read as a whole by native code, and its slots "
                "are read through Python code (a property or __getattribute__)",
                ReasonKind.UNTRACKED_VALUE,
            )
            return
        if not self.tracer.builder.type_fixed(source):
            self.tracer.builder.type_match(source, value)
        for name, slot in zip(names, slots):
            try:
                item = slot.__get__(value, cls)
            except AttributeError:  # an unset slot: native code leaves it out
                self.tracer.builder.expr(source, f"hasattr({{v}}, {name!r})", False)
                continue
            self.tracer.track(item, self._table_source(source, "attr", name))
            self.deep_track(item, depth + 1)

    def _deep_track_appended(self, value: list, pre: int, depth: int) -> None:
        """Native code reads the whole of a list appended to: guard the items from before the call,
        and the content of every item (those appended are guarded only if they are outside objects)."""
        source = self.tracer.source_of(value)
        self._deep_done.add(id(value))
        for index, item in enumerate(list(value)):
            if index < pre:
                self.tracer.track(item, ItemSource(source, index))
            self.deep_track(item, depth + 1)

    def _deep_track_module(self, module: nn.Module, source: Source, depth: int) -> None:
        for attr in ("_parameters", "_buffers", "_modules"):
            table = getattr(module, attr)
            sub = self._table_source(source, "attr", attr)
            self.tracer.builder.expr(sub, "list({v})", list(table))
            for key, item in table.items():
                item_source = self._table_source(sub, "item", key)
                self.tracer.track(item, item_source)
                if attr == "_modules" and item is not None:
                    self._deep_track_module(item, item_source, depth + 1)
        self.tracer.builder.equals_match(self._table_source(source, "attr", "training"), module.training)

    def constant_key_source(self, base: Source, key: object) -> Source:
        """`base[key]` for a key `is_constant_key` accepts: the key is one of the generated code's
        constants (an `Enum` member, a class, a function)."""
        if isinstance(key, torch.Tensor):
            known = self.tracer.source_of(key)
            label = known.describe() if known is not None else f"tensor {tuple(key.shape)}"
        elif isinstance(key, type) or callable(key) and not isinstance(key, Enum):
            label = getattr(key, "__qualname__", repr(key))
        else:
            label = f"{type(key).__name__}.{key.name}"
        return ConstKeySource(base, self.tracer.builder.const(key, "K"), label)

    def _table_source(self, base: Source, kind: str, name: object) -> Source:
        """`base.name` or `base[name]` (a str name), one object per distinct source in a capture. A module tree
        iterated at several levels (nested `nn.Sequential`s) is read again from the same sources;
        reusing the objects keeps their hash, description and guard variable instead of comparing
        fresh copies with them level by level. Equal sources either way: nothing else changes."""
        if type(name) is not str:
            return AttrSource(base, name) if kind == "attr" else ItemSource(base, name)
        key = (base, kind, name)
        found = self._table_sources.get(key)
        if found is None:
            found = AttrSource(base, name) if kind == "attr" else ItemSource(base, name)
            self._table_sources[key] = found
        return found
