"""Instances of the program's own subclasses of `dict` and `OrderedDict` made in the call.

Models return their results in such classes (benchmark_VAE's `ModelOutput(OrderedDict)`, whose
`__setitem__` and `__setattr__` keep every entry both as an item and as an attribute). Called
natively, the class's C constructor ran the program's `__setitem__` natively too, and the instance
was of unknown origin: the call could not be cached. Here the instance is made as CPython makes it,
step by step: `cls.__new__(cls)` (the base's, an empty mapping), then the class's `__init__`
interpreted if it has one of its own, else what the base's `__init__` does with the arguments:
`OrderedDict.__init__` stores each item with `self[key] = value` (the program's `__setitem__`,
interpreted), `dict.__init__` stores them without calling it. The instance belongs to the call
(fresh), and a cache entry rebuilds it from its items and attributes (effects/replay.py).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jitlab.jit.guards.kinds import dict_base

if TYPE_CHECKING:
    from jitlab.jit.tracing.lookaside_host import LookasideHost


def _items(args: tuple, kwargs: dict) -> list[tuple[Any, Any]] | None:
    """The items `dict.__init__(*args, **kwargs)` stores, in order, for the forms modelled here: no
    positional argument, or one plain dict, list or tuple of pairs; None for anything else."""
    if len(args) > 1:
        return None
    pairs: list[tuple[Any, Any]] = []
    if args:
        source = args[0]
        if type(source) is dict:
            pairs.extend(source.items())
        elif type(source) in (list, tuple) and all(type(p) is tuple and len(p) == 2 for p in source):
            pairs.extend(source)
        else:
            return None
    pairs.extend(kwargs.items())
    return pairs


def dict_subclass_call(
    lookasides: LookasideHost, cls: type, args: tuple, kwargs: dict
) -> Callable[[], Any] | None:
    """Make an instance of the program's dict subclass `cls` with `__init__` interpreted, or None."""
    base = dict_base(cls)
    if base is None:
        return None
    tracer = lookasides.tracer
    init = cls.__init__
    user_init = lookasides.specials.method(cls, "__init__")
    if user_init is None and init is not base.__init__:
        return None  # an __init__ of a library class between them: left to it
    items = None if user_init is not None else _items(args, kwargs)
    if user_init is None and items is None:
        return None

    def run() -> Any:
        instance = base.__new__(cls)
        tracer.fresh(instance)
        if user_init is not None:
            lookasides.interp.call(user_init, (instance, *args), kwargs)
        elif base is collections.OrderedDict:
            for key, value in items:
                tracer.store_item(instance, key, value)  # the program's __setitem__, if any, interpreted
        else:
            for key, value in items:
                dict.__setitem__(instance, key, value)
        return instance

    return run
