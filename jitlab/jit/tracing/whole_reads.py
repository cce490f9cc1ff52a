"""The tracer's reads of a whole outside object: native code handed a container, a plain object or a
module may read any of its content, so all of it is guarded (items, attributes, a module's parameters,
buffers and submodules), down to a few levels; a numpy array, deque, `array.array` or `bytearray` by
its content (outside_arrays.py). What cannot be guarded that way (a set of objects, a
dict with keys that are neither literals nor constants, deeper nesting) makes the capture uncacheable.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.guards.builder import SCALAR_TYPES, GuardBuilder
from jitlab.jit.guards.kinds import container_base, plain_object
from jitlab.jit.guards.sources import (
    AttrSource,
    ConstKeySource,
    ItemSource,
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


class WholeReads:
    """Mixin of `Tracer`: guarding the whole content of an outside object read as a whole."""

    # provided by the tracer it is mixed into (tracer.py and its other mixins)
    after_writes: ReadsAfterWrites
    builder: GuardBuilder
    arrays: OutsideArrays
    problem: Callable[[str, ReasonKind], None]
    source_of: Callable[[object], Source | None]
    track: Callable[[object, Source], Any]
    _deep_done: set[int]
    _outside: Callable[[object], bool]
    _table_sources: dict[tuple[Source, str, str], Source]

    def deep_track(self, value: object, depth: int = 0) -> None:
        """An outside container is read as a whole by native code: guard all of its content."""
        try:
            self._deep_track(value, depth)
        except Exception as exc:
            self.problem(
                f"internal error while guarding a {type(value).__name__}: {type(exc).__name__}: {exc}",
                ReasonKind.INTERNAL,
            )

    def _deep_track(self, value: object, depth: int) -> None:
        source = self.source_of(value)
        if source is None or not self._outside(value) or id(value) in self._deep_done:
            return
        if depth > 4:
            self.problem(
                "a deeply nested outside value is read as a whole by native code", ReasonKind.UNTRACKED_VALUE
            )
            return
        pre = self.after_writes.appended_prefix(value)
        if pre is not None:
            self._deep_track_appended(value, pre, depth)
            return
        if self.after_writes.guard_after_mutation(value):
            return
        self._deep_done.add(id(value))
        if is_outside_array(value):
            self.arrays.guard_array(value, source)
            return
        t = container_base(type(value)) or type(value)
        if t in (set, frozenset):
            if all(type(v) in SCALAR_TYPES for v in value):
                self.builder.expr(source, "{v}", frozenset(value))
            else:
                self.problem(
                    "a set of non-scalar values is read as a whole by native code", ReasonKind.UNTRACKED_VALUE
                )
        elif type(value) is tuple and len(value) <= 16 and all(type(v) in EXACT_SCALARS for v in value):
            self.builder.scalar_tuple(source, value)
        elif t in (list, tuple):
            self.builder.length(source, len(value))
            for i, item in enumerate(value):
                self.track(item, ItemSource(source, i))
                self.deep_track(item, depth + 1)
        elif t is dict:
            if not all(is_literal_key(k) or is_constant_key(k) for k in value):
                self.problem(
                    "a dict with keys that are neither literals nor constants is read as a whole",
                    ReasonKind.UNTRACKED_VALUE,
                )
                return
            self.builder.expr(source, "list({v})", list(value))
            for key, item in value.items():
                if is_literal_key(key):
                    self.track(item, self._table_source(source, "item", key))
                else:
                    self.track(item, self.constant_key_source(source, key))
                self.deep_track(item, depth + 1)
        elif isinstance(value, nn.Module):
            self._deep_track_module(value, source, depth)
        # a plain object's attributes, or those of a user subclass of a container (an EasyDict's)
        if t is not type(value):
            wants_attrs = type(value).__module__ not in ("builtins", "collections")
        else:
            wants_attrs = plain_object(value)
        if wants_attrs:
            attrs = getattr(value, "__dict__", None)
            if type(attrs) is dict and not isinstance(value, nn.Module):
                self.builder.expr(self._table_source(source, "attr", "__dict__"), "list({v})", list(attrs))
                for name, item in attrs.items():
                    self.track(item, self._table_source(source, "attr", name))
                    self.deep_track(item, depth + 1)

    def _deep_track_appended(self, value: list, pre: int, depth: int) -> None:
        """Native code reads the whole of a list appended to: guard the items from before the call,
        and the content of every item (those appended are guarded only if they are outside objects)."""
        source = self.source_of(value)
        self._deep_done.add(id(value))
        for index, item in enumerate(list(value)):
            if index < pre:
                self.track(item, ItemSource(source, index))
            self.deep_track(item, depth + 1)

    def _deep_track_module(self, module: nn.Module, source: Source, depth: int) -> None:
        for attr in ("_parameters", "_buffers", "_modules"):
            table = getattr(module, attr)
            sub = self._table_source(source, "attr", attr)
            self.builder.expr(sub, "list({v})", list(table))
            for key, item in table.items():
                item_source = self._table_source(sub, "item", key)
                self.track(item, item_source)
                if attr == "_modules" and item is not None:
                    self._deep_track_module(item, item_source, depth + 1)
        self.builder.equals_match(self._table_source(source, "attr", "training"), module.training)

    def constant_key_source(self, base: Source, key: object) -> Source:
        """`base[key]` for a key `is_constant_key` accepts: the key is one of the generated code's
        constants (an `Enum` member, a class, a function)."""
        if isinstance(key, torch.Tensor):
            known = self.source_of(key)
            label = known.describe() if known is not None else f"tensor {tuple(key.shape)}"
        elif isinstance(key, type) or callable(key) and not isinstance(key, Enum):
            label = getattr(key, "__qualname__", repr(key))
        else:
            label = f"{type(key).__name__}.{key.name}"
        return ConstKeySource(base, self.builder.const(key, "K"), label)

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
