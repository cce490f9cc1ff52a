"""dict's own lookups (`get`, `__getitem__`, `__contains__`) called on an outside instance of a dict
subclass, as `super().get(key)` in the subclass's own `get` does (transformers'
`_CanRecordRegistry`, keyed by model class name).

Native code handed such an object is guarded whole, its keys and items read as `dict.keys` and
`dict.__getitem__` read them (whole_reads.py). A lookup reads one key only: it is guarded as that
(the key present, and its item, or absent), so that registering another model class in the
registry does not make every entry miss, and the item found keeps a source for what the call reads
of it. Containers whose base type the tracer models (`container_base`) never come here: their
methods are container methods (container_methods.py).
"""

from __future__ import annotations

import types
from typing import Any, Protocol

from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.kinds import container_base
from jitlab.jit.guards.sources import BaseItemSource, Source, is_literal_key, literal

#: what `lookup` returns for a call it does not model
NOT_LOOKUP = object()
_LOOKUPS = ("get", "__getitem__", "__contains__")


class SubclassLookupTracer(Protocol):
    """What the lookups use of the tracer; tests/jit/test_jit_owned_state.py checks the real one."""

    builder: GuardBuilder

    def source_of(self, value: object) -> Source | None: ...

    def is_outside(self, obj: object) -> bool: ...

    def track(self, value: object, source: Source) -> Any: ...


def lookup(tracer: SubclassLookupTracer, fn: object, args: tuple, kwargs: dict) -> Any:
    """The result of `fn(*args)` when it is dict's own lookup of a literal key on an outside dict
    subclass instance with item access of its own, guarded as one key (module docstring); else
    NOT_LOOKUP."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None)
    if (
        type(fn) is not types.BuiltinMethodType
        or not isinstance(owner, dict)
        or container_base(type(owner)) is not None
        or name not in _LOOKUPS
        or kwargs
        or not args
        or len(args) > (2 if name == "get" else 1)
        or not is_literal_key(args[0])
        or (name == "__getitem__" and hasattr(type(owner), "__missing__"))  # a Counter's 0
    ):
        return NOT_LOOKUP
    source = tracer.source_of(owner)
    if source is None or not tracer.is_outside(owner):
        return NOT_LOOKUP
    key = args[0]
    builder = tracer.builder
    if not builder.type_fixed(source):
        builder.type_match(source, owner)
    present = dict.__contains__(owner, key)
    contains = builder.const(dict.__contains__, "DC")
    builder.expr(source, f"{contains}({{v}}, {literal(key)})", present)
    if name == "__contains__":
        return present
    if not present:
        if name == "get":
            return args[1] if len(args) == 2 else None
        raise KeyError(key)
    getter = builder.const(dict.__getitem__, "DG")
    return tracer.track(dict.__getitem__(owner, key), BaseItemSource(source, key, getter))
