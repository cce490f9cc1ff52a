"""Plain values as eager code has them: `DataInt` (graph/recorder.py) replaced by `int`.

A data-dependent int is a `DataInt` while the capture runs, so that the recorder can map it back to
its graph node. What leaves the call (its return value, what it stored in outside objects) and what
is hashed (set items, dict keys: hashing reads the value, so it is a speculation from then on and the
identity is no longer needed) must be what eager code gets: a plain `int`.
"""

from __future__ import annotations

from typing import Any

import torch

from jitlab.jit.graph.data_values import DataInt


def plain_key(value: object) -> Any:
    """`value` about to be hashed (a set item, a dict key), with DataInts made plain ints (in tuples
    too)."""
    t = type(value)
    if t is DataInt:
        return int(value)
    if t is tuple and any(type(v) is DataInt or type(v) is tuple for v in value):
        return tuple(plain_key(v) for v in value)
    return value


def plain_ints(value: object, depth: int = 0) -> Any:
    """`value` as eager code would have it: DataInts become plain ints, in the value itself, in tuples
    and frozensets (rebuilt), and in lists, dict values, dict keys and sets (replaced in place; a
    dict keeps its order; a set gets its items back in the order it iterates them, which CPython
    may lay out differently from the order eager code inserted them)."""
    t = type(value)
    if t is DataInt:
        return int(value)
    if depth >= 4:
        return value
    if t is tuple or t is torch.Size:
        return t(plain_ints(v, depth + 1) for v in value)
    if t is frozenset:
        return frozenset(plain_key(v) for v in value) if any(map(_has_data_int, value)) else value
    if t is list:
        for i, item in enumerate(value):
            plain = plain_ints(item, depth + 1)
            if plain is not item:
                value[i] = plain
    elif t is dict:
        if any(map(_has_data_int, value)):
            items = [(plain_key(k), v) for k, v in value.items()]
            value.clear()
            value.update(items)
        for key, item in value.items():
            plain = plain_ints(item, depth + 1)
            if plain is not item:
                value[key] = plain
    elif t is set and any(map(_has_data_int, value)):
        items = [plain_key(v) for v in value]
        value.clear()
        value.update(items)
    return value


def _has_data_int(key: object) -> bool:
    t = type(key)
    return t is DataInt or (t is tuple and any(map(_has_data_int, key)))
