"""What a native call reaches beyond the outside values it is handed directly.

Native code reads whatever it can reach from what it is given; an outside value read that way must
be guarded, or its content is baked into the entry and a change between calls returns the old
result. NativeCalls (native_calls.py) reads whole the outside values among a call's arguments and
owner; this module finds the others and gives them sources:

- outside values inside values the call made (`torch.tensor([MEAN, STD])`, `"{h.scale}".format_map(
  {"h": h})`, `sum(map(attrgetter("scale"), [h]))`): `reached_through_made`;
- the object of a builtin method kept outside (`GET = table.get`, `key=scores.__getitem__`):
  `owner_through_method`, `owners_of_methods`;
- what an outside weak reference refers to: `referent`;
- torch's global settings the program reads (`torch.get_default_dtype()`): `guarded_state_read`;
- an outside iterator the call steps (`next(COUNTER)`), which no guard can hold: the capture is not
  cached (`refuse_stepped_iterators`, `stepped_outside_iterator`).
"""

from __future__ import annotations

import operator
import types
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import torch

from jitlab.jit.guards.builder import SCALAR_TYPES, GuardBuilder
from jitlab.jit.guards.kinds import is_iterator
from jitlab.jit.guards.sources import AttrSource, ReferentSource, Source
from jitlab.jit.reasons import ReasonKind
from jitlab.jit.tracing.native_reads import hands_on_unread, outside_values_reached
from jitlab.jit.tracing.sequence_moves import moves_numbers_unread, numbers_read, reader_name

#: builtins that do not step an iterator they are handed (`iter(it)` returns `it` itself)
_STEPS_NOTHING = frozenset(
    map(id, (isinstance, issubclass, type, id, callable, iter, hash, repr, getattr, hasattr))
)

#: objects the call made that `reached_through_made` looks through per native call (numbers and
#: tensors not counted), about 1 µs each at capture; past it the capture is not cached
REACH_LIMIT = 20_000


class ReachTracer(Protocol):
    """What these functions use of the tracer; tests/jit/test_jit_owned_state.py checks the real one."""

    builder: GuardBuilder

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def source_of(self, value: object) -> Source | None: ...

    def track(self, value: object, source: Source) -> Any: ...

    def is_outside(self, obj: object) -> bool: ...


def reached_through_made(
    tracer: ReachTracer, fn: object, args: tuple, kwargs: dict, owner: object
) -> list[Any]:
    """The outside values native `fn` can reach through the values made in the call that it
    reads (an outside list inside a list made in the call, handed to `torch.tensor`): read whole
    as if handed directly. What it reads is what it may read the numbers of (`numbers_read`: the
    keys only of a dict searched with `in` or `get`), not what it only moves (`list.extend`,
    `dict.update`, concatenations) or steps past unread (`hands_on_unread`); `x in (A, B)`
    compares the items whose class has an equality of its own (the others by identity). A
    structure too large to look through makes the capture uncacheable: what native code reads in
    it could not be guarded."""
    if (
        moves_numbers_unread(fn, args)
        or moves_items_unread(fn)
        or hands_on_unread(fn, (*args, *kwargs.values()))
    ):
        return []
    if fn is operator.contains and len(args) == 2 and type(args[0]) in (list, tuple) and not kwargs:
        roots: tuple = (args[1], *(v for v in args[0] if type(v).__eq__ is not object.__eq__))
    else:
        roots = (*numbers_read(fn, args, kwargs), owner)
    made = [
        v
        for v in roots
        if v is not None
        and not isinstance(v, torch.Tensor)
        and type(v) not in SCALAR_TYPES
        and tracer.source_of(v) is None
    ]
    if not made:
        return []
    found, complete = outside_values_reached(
        made, lambda v: tracer.is_outside(v) and tracer.source_of(v) is not None, REACH_LIMIT
    )
    if not complete:
        tracer.problem(
            f"{reader_name(fn)} is handed a structure made in the call too large to look through "
            "for the outside values it may read",
            ReasonKind.UNTRACKED_VALUE,
        )
    return found


#: methods of the built-in containers that hand items on, look keys up or store, reading no value
#: (a model output's `keys()` and `items()`, made in the call and holding an outside cache)
_MOVING_METHODS = frozenset(
    {
        "keys", "values", "items", "copy", "get", "__getitem__", "__contains__", "__len__", "__iter__",
        "pop", "popitem", "setdefault", "update", "append", "extend", "insert", "__setitem__",
        "__delitem__", "clear",
    }
)  # fmt: skip


def moves_items_unread(fn: object) -> bool:
    """Whether native `fn` is such a method of a list, tuple, dict or set (or a subclass's
    instance: a `ModelOutput` is an `OrderedDict`)."""
    return (
        type(fn) is types.BuiltinMethodType
        and isinstance(getattr(fn, "__self__", None), (dict, list, tuple, set, frozenset))
        and fn.__name__ in _MOVING_METHODS
    )


def owner_through_method(tracer: ReachTracer, method: object, owner: object) -> None:
    """A builtin method kept outside the call (`GET = table.get`, `KEY = scores.__getitem__`) is
    the only way to the object it is bound to: that object gets its source through the method,
    so that what the call reads of it (its items) is guarded. Modules and classes (`math.sqrt`,
    a classmethod's class) are not read this way."""
    if isinstance(owner, (types.ModuleType, type)) or tracer.source_of(owner) is not None:
        return
    source = tracer.source_of(method)
    if source is not None and tracer.is_outside(owner) and tracer.is_outside(method):
        tracer.track(owner, AttrSource(source, "__self__"))


def owners_of_methods(tracer: ReachTracer, values: tuple) -> list[Any]:
    """The objects bound to the builtin methods among `values` (`key=TABLE.__getitem__` kept in
    an outside name): native code calling the method reads its object."""
    owners = []
    for value in values:
        if type(value) is types.BuiltinMethodType:
            owner = value.__self__
            owner_through_method(tracer, value, owner)
            if tracer.source_of(owner) is not None:
                owners.append(owner)
    return owners


def referent(tracer: ReachTracer, ref: weakref.ref) -> Any:
    """What an outside weak reference refers to (`self._model_ref()`, a `WeakValueDictionary`'s
    item): guarded as `ref()`, so that what the call reads of it is guarded too."""
    value = ref()
    source = tracer.source_of(ref)
    if source is None or not tracer.is_outside(ref):
        return value
    return tracer.track(value, ReferentSource(source))


def guarded_state_read(builder: GuardBuilder, getter: Callable[[], Any]) -> Any:
    """What one of torch's global settings is (`torch.get_default_dtype()`), checked again on
    every call: the program may act on it in Python, and `torch.set_default_dtype` between calls
    changes it."""
    value = getter()
    name = builder.const(getter, "S")
    expected = builder.const(value, "V")
    builder.global_state(f"{name}() == {expected}", f"torch.{getter.__name__}() is {value!r}")
    return value


def refuse_stepped_iterators(tracer: ReachTracer, fn: object, reads: tuple) -> None:
    """Native `fn`, handed `reads`, may step the outside iterators among them."""
    if id(fn) in _STEPS_NOTHING:
        return
    for value in reads:
        if is_iterator(value) and tracer.is_outside(value) and tracer.source_of(value) is not None:
            stepped_outside_iterator(tracer, value, reader_name(fn))


def stepped_outside_iterator(tracer: ReachTracer, iterator: object, by: str) -> None:
    """An outside iterator is (or may be) stepped by `by`: where it stands is state outside the
    graph, which an entry would neither check nor advance, so the capture is not cached."""
    tracer.problem(
        f"{by} steps an outside {type(iterator).__name__} (an iterator kept between calls): where it "
        "stands is state outside the graph",
        ReasonKind.SIDE_EFFECT,
    )
