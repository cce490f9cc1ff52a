"""What kind of value the tracer is looking at: containers, library namespaces, plain objects.

Shared by the tracer's modules (reads and writes in tracing/tracer.py, native calls in native_calls.py, the
callbacks in lookasides.py) so that they classify values the same way.
"""

from __future__ import annotations

import collections
import types

import torch
import torch.nn as nn

CONTAINERS = (list, tuple, dict)
MODULE_SEQUENCES = (nn.ModuleList, nn.Sequential)
MODULE_CONTAINERS = (*MODULE_SEQUENCES, nn.ModuleDict)


#: torch's functions that list a module's direct submodules from its `_modules` table: the tracer
#: guards the table's names and hands each submodule out (tracing/module_containers.py)
CHILDREN_VIEWS = (nn.Module.named_children, nn.ModuleDict.items, nn.ModuleDict.values, nn.ModuleDict.keys)


def module_container(t: type) -> type | None:
    """The torch module container (ModuleList, Sequential, ModuleDict) whose own `__iter__` the class
    `t` uses (the container itself, or a subclass that does not override it), or None. The tracer
    iterates those itself: their keys are guarded and each submodule is read as it is used, where
    stepping into torch's `__iter__` reads `_modules.values()`, a read of the whole module tree."""
    for base in MODULE_CONTAINERS:
        if issubclass(t, base) and getattr(t, "__iter__", None) is base.__iter__:
            return base
    return None


LIBRARY_MODULE_ROOTS = {
    "torch", "math", "operator", "functools", "itertools", "builtins", "numpy", "collections",
    "typing", "dataclasses", "enum", "abc", "copy", "numbers", "string", "types", "warnings",
}  # fmt: skip


def module_root(obj: object) -> str:
    name = getattr(obj, "__module__", None) or ""
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
    return name.split(".", 1)[0]


def plain_object(value: object) -> bool:
    """An instance of an ordinary class (its attributes in __dict__), not a module, class or function."""
    if isinstance(
        value, (type, types.ModuleType, types.FunctionType, types.MethodType, nn.Module, torch.Tensor)
    ):
        return False
    return hasattr(value, "__dict__") and type(value).__module__ not in ("builtins",)


_ACCESS_METHODS = frozenset(
    {"__getitem__", "__iter__", "__len__", "__contains__", "keys", "values", "items", "get", "__missing__"}
)
_BASE_OF: dict[type, type | None] = {}


def container_base(t: type) -> type | None:
    """For `list`, `tuple`, `dict`, `set` and their subclasses whose item access is the base type's
    (`OrderedDict`, an `EasyDict` that only adds `__getattr__`, a named tuple), that base; else None.

    The tracer guards such containers item by item like the base type. A subclass that defines item
    access in Python (`__getitem__`, `__iter__`, `keys`, ...) is left to the interpreter, which runs
    those methods as user code; `defaultdict` counts, its missing keys are checked where read.
    """
    known = _BASE_OF.get(t, False)
    if known is not False:
        return known  # type: ignore[return-value]
    base = None
    for candidate in (dict, list, tuple, set):
        if issubclass(t, candidate):
            base = candidate
            for klass in t.__mro__:
                if klass is candidate:
                    break
                if any(isinstance(klass.__dict__.get(n), types.FunctionType) for n in _ACCESS_METHODS):
                    base = None
                    break
            break
    _BASE_OF[t] = base
    return base


_DICT_BASES = (dict, collections.OrderedDict)


def dict_base(cls: type) -> type | None:
    """`dict` or `OrderedDict` when `cls` is a class statement's subclass of it whose instances hold
    nothing but items and attributes (no `__new__` or `__slots__` of its own, no C type between them
    such as `defaultdict`, whose factory is state of its own; metaclass `type`; not a dataclass),
    else None."""
    if type(cls) is not type or cls in _DICT_BASES or hasattr(cls, "__dataclass_fields__"):
        return None
    for base in (collections.OrderedDict, dict):
        if issubclass(cls, base) and cls.__new__ is base.__new__:
            others = [b for b in cls.__mro__ if b not in (object, dict, collections.OrderedDict)]
            if all(
                b.__flags__ & _HEAP_TYPE and "__slots__" not in b.__dict__ and type(b) is type for b in others
            ):
                return base
    return None


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: made by a class statement, not a C type


def named_tuple_source(type_name: str, tuple_new: str, parts: list[str]) -> str:
    """Python source that makes an instance of the named tuple class `type_name` holding `parts`,
    given the name `tuple_new` for `tuple.__new__` in the generated code's namespace. A class's own
    `__new__` may convert what it is given (brevitas's `QuantTensor` makes tensors of its numbers):
    `tuple.__new__(T, items)` builds the same object from the items the call made, as the named
    tuple's generated `__new__` itself does."""
    return f"{tuple_new}({type_name}, ({''.join(p + ', ' for p in parts)}))"


def has_slots(value: object) -> bool:
    """An instance of a Python class with slots (`__slots__` naming more than `__dict__` and
    `__weakref__`), which native code reading the object whole reads as well; not a class,
    module, function, module of layers or tensor, whose content is read otherwise."""
    if type(value).__module__ in ("builtins", "collections") or isinstance(
        value, (type, types.ModuleType, types.FunctionType, types.MethodType, nn.Module, torch.Tensor)
    ):
        return False
    return bool(slot_names(type(value)))


def slot_names(cls: type) -> list[str]:
    """The slot names of `cls` and its bases as pickling and `copy` get them (`copyreg._slotnames`,
    written out here because that function stores its answer on the class): `__slotnames__` where
    the class sets it, else each `__slots__` entry but `__dict__` and `__weakref__`, with a private
    name mangled."""
    given = cls.__dict__.get("__slotnames__")
    if given is not None:
        return list(given)
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__")
        if slots is None:
            continue
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            stripped = klass.__name__.lstrip("_")
            if name.startswith("__") and not name.endswith("__") and stripped:
                name = f"_{stripped}{name}"
            names.append(name)
    return names


def is_iterator(value: object) -> bool:
    """An iterator (its class has `__next__`): stepping it changes where it is, state outside the
    graph when it comes from outside the call (`next(self.counter)` on an `itertools.count()`)."""
    return defines(type(value), "__next__") and not isinstance(value, torch.Tensor)


_ABSENT = object()


def class_member(cls: type, name: str, default: object = None) -> object:
    """What the first class of `cls`'s method resolution order that defines `name` holds under it,
    looked up in their namespaces (no descriptor or metaclass `__getattr__` runs); `default` where
    none does."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return default


def defines(cls: type, name: str) -> bool:
    """Whether a class of `cls`'s method resolution order defines `name` (`class_member`)."""
    return class_member(cls, name, _ABSENT) is not _ABSENT
