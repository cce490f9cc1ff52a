"""Native calls that move numbers between sequences without reading them.

Sizes read by Python stay graph values (`DataInt`s, graph/shapes.py) as long as no code reads their
value. Python's handling of shapes moves them around a lot without reading them: `(*x.shape[:-1], -1,
d)` extends a list with a `torch.Size` (LIST_EXTEND), `x.size()[:-1] + (nf,)` concatenates a
`torch.Size` with a tuple, `torch.Size([b, t])` wraps a list. Each keeps the very int objects it was
given (CPython's tuple and list copies do not convert them), so the sizes stay symbolic through them;
so does a call with `**kwargs` holding a size (DICT_MERGE is a `dict.update` of the new keywords),
which transformers' mask functions make in every layer, and `torch.is_tensor(n)`, which looks at the
type only (M2M100's positions: `torch.is_tensor(max_pos)`). Every other native call that is handed
a size still reads it and pins it (native_calls.py).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from jitlab.jit.tracing.owned_results import read_by_construction

SEQUENCES = (tuple, list, torch.Size)
_CONCATENATIONS = (operator.add, operator.iadd, operator.concat, operator.iconcat)
_LIST_STORES = (list.extend, list.append, list.insert)
_COPIES = (list.copy, dict.copy, tuple, list)


def moves_numbers_unread(fn: object, args: tuple) -> bool:
    """Whether native `fn(*args)` only copies or concatenates the numbers it is handed, or looks at
    their type only."""
    if fn is torch.is_tensor or fn is torch.is_storage:
        return True
    if fn is torch.Size:
        return len(args) == 1 and type(args[0]) in SEQUENCES
    if any(fn is store for store in _LIST_STORES):
        return bool(args) and type(args[0]) is list
    if any(fn is concat for concat in _CONCATENATIONS):
        return len(args) == 2 and type(args[0]) in SEQUENCES and type(args[1]) in SEQUENCES
    if fn is dict.update:  # the values move; the keys were hashed when they went into `args[1]`
        return len(args) == 2 and type(args[0]) is dict and type(args[1]) is dict
    if any(fn is copy for copy in _COPIES):
        return len(args) == 1 and type(args[0]) in (*SEQUENCES, dict)
    return False


def numbers_read(fn: object, args: tuple, kwargs: dict) -> Any:
    """What native `fn(*args, **kwargs)` may read the numbers of: everything it reaches, except the
    values of a dict searched with `in` (`"past_key_value" in kwargs` in transformers' deprecation
    wrapper around Gemma's attention), which it never reads: only the key and the dict's keys; and
    the values of a dict `dict.get` looks a key up in; and
    the fields but the first of a `ModelOutput` it builds (Gemma 2's output holds a cache whose
    sliding-window layers count the tokens seen, a size)."""
    if fn is operator.contains and len(args) == 2 and type(args[0]) is dict and not kwargs:
        return (args[1], tuple(args[0]))
    owner = getattr(fn, "__self__", None)
    if type(owner) is dict and getattr(fn, "__name__", None) == "get" and 1 <= len(args) <= 2 and not kwargs:
        # `kwargs.get("capturable", False)` (torch.optim's wrapper around each optimizer function):
        # the key and the dict's keys are compared; the value found, or the default, is returned
        # unread (a learning rate beside it stays a graph input)
        return (args[0], tuple(owner))
    first_field = read_by_construction(fn, args, kwargs)
    if first_field is not None:
        return first_field
    return (fn, args, kwargs)


def reader_name(fn: object) -> str:
    """How a native callable is named in the note of a size it pins (`range`, `str.format`)."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return f"{name}()"
