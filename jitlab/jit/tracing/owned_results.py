"""What a native call made that belongs to the call, like a literal made by interpreted code.

A call's result is of unknown origin when native code made it: the tracer cannot say that nothing
outside the call holds it, so the call cannot return it from a cache entry, nor change it without
replaying the change. Some native calls are known to make new objects that nothing else holds:
- `list`, `dict`, `set`, `sorted`, `collections.defaultdict` and `collections.OrderedDict` (torchvision's and many detectors'
  `result = OrderedDict()`, filled and returned), and `torch.Size` (nflows' `torch.Size(batch_shape).numel()`);
- operators of the built-in containers, which always build a new one: `[1] * x.dim()`,
  `[a] + rest`, `d1 | d2`, `s1 - s2` (`_operator_results`), the lists `str.split` makes, and the
  (nested) lists of `tensor.tolist()`;
- `torch._C._group_tensors_by_device_and_dtype` (torch.optim's foreach paths): new dicts, tuples and
  lists holding the tensors and lists it was given;
- `copy.copy` and `copy.deepcopy`: the containers and the copied object they make (`_new_copies`);
- `torch.autocast(...)` and its per-device subclasses: a context the call enters and leaves, recorded
  as graph nodes (graph/autocast_nodes.py);
- `object.__new__(cls)` called by a class's own `__new__` (`super().__new__(cls)`), which the
  interpreter steps into: the new instance;
- value holders of installed libraries, whose constructors only store the arguments on the new
  object, rebuilt by a cache entry from their fields: transformers' `ModelOutput` (a dataclass and
  an `OrderedDict`: `MaskedLMOutput`, `BaseModelOutputWithPast`, ...), which every model of the
  library returns. Its `__post_init__` fills the dict from the non-None fields and registers the
  class as a pytree node once; run again when the entry rebuilds it, it does the same. TorchDynamo
  models it specially too.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import operator
import types
from typing import Any

import torch

from jitlab.jit.graph.data_values import DataInt
from jitlab.jit.guards.kinds import plain_object

_FRESH_CONSTRUCTORS = (list, dict, set, sorted, collections.OrderedDict, collections.defaultdict, torch.Size)
_COPIES = (copy.copy, copy.deepcopy)
_VALUE_HOLDERS = (("transformers.utils.generic", "ModelOutput"),)
# torch.optim's foreach paths group their tensor lists by device and dtype: new dicts, tuples and lists
# (torch.utils' version is decorated with no_grad, whose wrapper is interpreted: the function it
# wraps is the one called natively)
_GROUP_BY_DEVICE = (
    torch._C._group_tensors_by_device_and_dtype,
    torch.utils._foreach_utils._group_tensors_by_device_and_dtype,
    getattr(torch.utils._foreach_utils._group_tensors_by_device_and_dtype, "__wrapped__", None),
)


def owned_results(fn: object, args: tuple, result: object) -> list[Any]:
    """The objects `fn(*args)` made that belong to the call (see the module doc)."""
    if fn in _FRESH_CONSTRUCTORS or is_value_holder_class(fn) or _new_instance(fn, args, result):
        return [result]
    if isinstance(fn, type) and issubclass(fn, torch.amp.autocast_mode.autocast) and type(result) is fn:
        return [result]
    if fn in _CONTAINER_OPERATORS or _splits_a_string(fn):
        return _operator_results(args, result)
    if fn in _GROUP_BY_DEVICE:
        return _containers_in(result) or []
    if _tensor_tolist(fn) and type(result) is list:
        return [value for value in _containers_in(result) or () if type(value) is list]
    return _new_copies(fn, args, result)


# list + list, list * int, dict | dict, set - set, ...: the built-in types' own operators build a new
# container holding the operands' items (the in-place forms, `+=`, change the left operand instead)
_CONTAINER_OPERATORS = (operator.add, operator.mul, operator.or_, operator.and_, operator.sub, operator.xor)
_OPERAND_TYPES = (list, tuple, dict, set, frozenset, int, bool, str, DataInt)
_SPLITS = {"split", "rsplit", "splitlines"}


def _new_instance(fn: object, args: tuple, result: object) -> bool:
    """`object.__new__(cls)` called by a class's own `__new__` written in Python
    (`super().__new__(cls)`): a new, empty instance of the program's class `cls`."""
    return (
        fn is object.__new__
        and len(args) == 1
        and isinstance(args[0], type)
        and type(result) is args[0]
        and args[0].__module__ != "builtins"
        and plain_object(result)
    )


def _splits_a_string(fn: object) -> bool:
    """`text.split(...)`: str's own C method (a bound builtin), which returns a new list."""
    return type(fn) is types.BuiltinMethodType and type(fn.__self__) is str and fn.__name__ in _SPLITS


def _tensor_tolist(fn: object) -> bool:
    """`t.tolist()`: the C method of torch.Tensor (a subclass overriding it in Python is not one)."""
    return (
        type(fn) is types.BuiltinMethodType
        and isinstance(fn.__self__, torch.Tensor)
        and fn.__name__ == "tolist"
    )


def _operator_results(args: tuple, result: object) -> list[Any]:
    """The new list, dict or set an operator of the built-in containers made, when every operand is
    of a built-in type exactly (a subclass, or an int subclass with its own `__index__`, may run
    code of its own, and another class's operator may return anything) and the result is none of
    them. Ints made from tensor data (DataInt, no methods of its own) count as ints."""
    if type(result) not in (list, dict, set) or any(result is a for a in args):
        return []
    if not all(type(a) in _OPERAND_TYPES for a in args):
        return []
    return [result]


def is_value_holder_class(fn: object) -> bool:
    """Whether calling `fn` builds a new plain value holder (see the module doc)."""
    if not isinstance(fn, type) or not dataclasses.is_dataclass(fn):
        return False
    return any((base.__module__, base.__qualname__) in _VALUE_HOLDERS for base in fn.__mro__[1:])


def read_by_construction(fn: object, args: tuple, kwargs: dict) -> tuple | None:
    """For a value holder's constructor (a `ModelOutput`), the arguments it reads as a whole: only
    its first field (its `__post_init__` may iterate that one, when the others are None); the other
    fields it stores, testing them against None. None for any other callable: it may read them all.
    A per-call cache stored in an output (`past_key_values=cache`) is then not guarded whole."""
    if not is_value_holder_class(fn):
        return None
    if args:
        return (args[0],)
    fields = dataclasses.fields(fn)
    return (kwargs[fields[0].name],) if fields and fields[0].name in kwargs else ()


def _new_copies(fn: object, args: tuple, result: object) -> list[Any]:
    """What copy.copy or copy.deepcopy made, new and owned by the call: a copied plain object (its
    class copies the standard way: no `__copy__`, `__deepcopy__` or own `__reduce__`), or the lists,
    dicts and sets of `result` (itself and, through lists, dicts, sets and tuples, the ones inside it)
    that are nowhere in the arguments. The copy of an immutable value may be the value itself, and a
    class's own copying may return anything: those stay of unknown origin."""
    if fn not in _COPIES:
        return []
    if plain_object(result):  # a copied object: new unless its class copies in its own way
        t = type(result)
        own = hasattr(t, "__copy__") or hasattr(t, "__deepcopy__")
        standard = t.__reduce_ex__ is object.__reduce_ex__ and t.__reduce__ is object.__reduce__
        return [result] if standard and not own and all(result is not a for a in args) else []
    given, made = _containers_in(args), _containers_in(result)
    if given is None or made is None:
        return []  # too many to compare: nothing is marked, the copies stay of unknown origin
    ids = {id(value) for value in given}
    return [value for value in made if id(value) not in ids and type(value) is not tuple]


def _containers_in(value: object, limit: int = 10_000) -> list[Any] | None:
    """`value` and the lists, dicts, sets and tuples reachable from it through such containers, or
    None when there are more than `limit`."""
    found: list[Any] = []
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) not in (list, dict, set, tuple) or id(item) in seen:
            continue
        if len(found) == limit:
            return None
        seen.add(id(item))
        found.append(item)
        stack.extend(item.values() if type(item) is dict else item)
    return found
