"""Where an outside value came from: an argument, a global, a closure cell, an attribute chain, an item.

A source is a frozen, hashable description that can write itself as a Python expression over the
guard function's parameters (`args`, `kwargs`) and its named constants. It says nothing about what is
checked; that is `builder.py`'s job (the same split as TorchDynamo's sources and guards).
"""

from __future__ import annotations

import enum
import keyword
import types
from collections.abc import Callable
from dataclasses import dataclass

Namer = Callable[["Source"], str]


class Source:
    """Base class: `expr(name)` renders the source, using `name(parent)` for sub-sources."""

    def _keep_hash(self, *parts: object) -> int:
        """The hash of `parts`, kept on the source: `__hash__` reads it back (`self.__dict__.get(
        "_hash") or self._keep_hash(...)`, a hash of 0 merely computed again). Sources are dict and
        set keys thousands of times per capture (guard variables, guards already added, tensor
        inputs); a generated dataclass hash would rehash the whole chain of parents each time."""
        h = hash(parts)
        object.__setattr__(self, "_hash", h)  # frozen dataclasses: not a field
        return h

    def expr(self, name: Namer) -> str:
        raise NotImplementedError

    @property
    def parent(self) -> Source | None:
        return None

    def describe(self) -> str:
        """The source as the user would write it (for explain()); kept once made, because guards
        of a deep module tree describe the same long attribute chains thousands of times."""
        text = self.__dict__.get("_described")
        if text is None:
            text = self.expr(lambda s: s.describe())
            object.__setattr__(self, "_described", text)  # frozen dataclasses: not a field
        return text


@dataclass(frozen=True)
class ArgsSource(Source):
    """The positional-argument tuple of the call."""

    def expr(self, name: Namer) -> str:
        return "args"


@dataclass(frozen=True)
class KwargsSource(Source):
    """The keyword-argument dict of the call."""

    def expr(self, name: Namer) -> str:
        return "kwargs"


@dataclass(frozen=True)
class ConstSource(Source):
    """An object fixed when the JIT was created (the root module, a globals dict, a cell)."""

    const_name: str
    label: str = ""

    def expr(self, name: Namer) -> str:
        return self.const_name

    def describe(self) -> str:
        return self.label or self.const_name


@dataclass(frozen=True)
class AttrSource(Source):
    base: Source
    attr: str

    def __hash__(self) -> int:
        return self.__dict__.get("_hash") or self._keep_hash(self.base, self.attr)

    @property
    def parent(self) -> Source:
        return self.base

    def expr(self, name: Namer) -> str:
        if self.attr.isidentifier() and not keyword.iskeyword(self.attr):
            return f"{name(self.base)}.{self.attr}"
        return f"getattr({name(self.base)}, {self.attr!r})"


@dataclass(frozen=True)
class GenericAttrSource(Source):
    """`object.__getattribute__(base, attr)`: the attribute as CPython's generic lookup finds it,
    without the Python `__getattribute__` of `base`'s class (a transformers config's, which maps
    names and then calls `super().__getattribute__`). That is the read such a method ends with,
    so it is what its capture saw; guard code reading `base.attr` would run the whole method again
    on every call (two Python frames per attribute of a config). `getter` names
    `object.__getattribute__` among the generated code's constants. Described as the call: where a
    class's `__getattribute__` computes what it returns, `base.attr` is another value."""

    base: Source
    attr: str
    getter: str

    def __hash__(self) -> int:
        return self.__dict__.get("_hash") or self._keep_hash(self.base, self.attr, "generic")

    @property
    def parent(self) -> Source:
        return self.base

    def expr(self, name: Namer) -> str:
        return f"{self.getter}({name(self.base)}, {self.attr!r})"

    def describe(self) -> str:
        return f"object.__getattribute__({self.base.describe()}, {self.attr!r})"


@dataclass(frozen=True)
class ItemSource(Source):
    """`base[key]` for a literal key (int, str, bool, None, a slice or tuple of those).

    Sources are dictionary keys (guard variables, the guards already added), so they must hash even
    when the key itself does not: slices are unhashable before Python 3.12, hence `__hash__` below
    (the generated `__eq__` compares keys with ==, which slices and tuples support)."""

    base: Source
    key: object

    def __hash__(self) -> int:
        return self.__dict__.get("_hash") or self._keep_hash(self.base, hashable_key(self.key))

    @property
    def parent(self) -> Source:
        return self.base

    def expr(self, name: Namer) -> str:
        return f"{name(self.base)}[{literal(self.key)}]"


@dataclass(frozen=True)
class BaseItemSource(Source):
    """`dict.__getitem__(base, key)` (`getter` names that function among the generated code's
    constants): an item of a dict subclass whose own item access is Python code (a `Counter`'s
    `__missing__`, a class that computes `__getitem__`), read as native code reads it, the dict's
    own item, without running that code on every call."""

    base: Source
    key: object
    getter: str

    def __hash__(self) -> int:
        return self.__dict__.get("_hash") or self._keep_hash(self.base, hashable_key(self.key), "base")

    @property
    def parent(self) -> Source:
        return self.base

    def expr(self, name: Namer) -> str:
        return f"{self.getter}({name(self.base)}, {literal(self.key)})"

    def describe(self) -> str:
        return f"dict.__getitem__({self.base.describe()}, {literal(self.key)})"


@dataclass(frozen=True)
class ReferentSource(Source):
    """`base()`: what a weak reference at `base` refers to now (None once it is gone)."""

    base: Source

    def __hash__(self) -> int:
        return self.__dict__.get("_hash") or self._keep_hash(self.base, "referent")

    @property
    def parent(self) -> Source:
        return self.base

    def expr(self, name: Namer) -> str:
        return f"{name(self.base)}()"


@dataclass(frozen=True)
class ConstKeySource(Source):
    """`base[K]` for a key that is no literal but is the same object on every call and compares by
    identity or by a built-in rule: an `Enum` member, a class, a function (nncf's
    `self._forward_fn_per_mode[self.mode]`, a dict of handlers keyed by module classes). `key_const`
    names the key among the generated code's constants, which all segments of a capture share."""

    base: Source
    key_const: str
    key_label: str

    def __hash__(self) -> int:
        return self.__dict__.get("_hash") or self._keep_hash(self.base, self.key_const)

    @property
    def parent(self) -> Source:
        return self.base

    def expr(self, name: Namer) -> str:
        return f"{name(self.base)}[{self.key_const}]"

    def describe(self) -> str:
        return f"{self.base.describe()}[{self.key_label}]"


def is_constant_key(key: object) -> bool:
    """Whether a dict key that is no literal may stand in generated code as a constant: an `Enum`
    member, a class or a function, whose hash and equality are Python's own (identity, or the
    `int`/`str` value of an `IntEnum`/`StrEnum` member), so looking the same object up again finds
    what the program found. A key type that defines its own `__eq__` or `__hash__` is not one."""
    t = type(key)
    if isinstance(key, enum.Enum):
        return all(_builtin_rule(t, name) for name in ("__eq__", "__hash__"))
    if t in _IDENTITY_HASHED_TENSORS:
        # a parameter keying an optimizer's `state`: hashed by identity, and a lookup of the same
        # object finds it by identity (the elementwise `__eq__` is never called for it)
        return True
    if isinstance(key, type):
        return t.__eq__ is type.__eq__ and t.__hash__ is type.__hash__
    return t is types.FunctionType or t is types.BuiltinFunctionType


def _identity_hashed_tensors() -> tuple[type, ...]:
    import torch

    return (torch.Tensor, torch.nn.Parameter)


_IDENTITY_HASHED_TENSORS = _identity_hashed_tensors()


def _builtin_rule(cls: type, name: str) -> bool:
    """Whether `cls` gets the method `name` from the standard library's enum or a built-in type."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__module__ in ("builtins", "enum")
    return False


LITERAL_TYPES = (int, str, bool, type(None))


def is_literal_key(key: object, depth: int = 0) -> bool:
    """Whether `key` can be written back as Python source: an int, str, bool or None, a slice of ints,
    or a (short, shallow) tuple of such keys (e.g. `d[("a", 1)]`, `t[1:, 0]`)."""
    t = type(key)
    if t in LITERAL_TYPES:
        return True
    if t is slice:
        return all(type(p) in (int, type(None)) for p in (key.start, key.stop, key.step))
    if t is tuple and depth == 0 and len(key) <= 8:
        return all(is_literal_key(k, 1) for k in key)
    return False


def hashable_key(key: object) -> object:
    """A hashable stand-in for a literal key (slices become tagged tuples)."""
    if type(key) is slice:
        return ("<slice>", key.start, key.stop, key.step)
    if type(key) is tuple:
        return tuple(hashable_key(k) for k in key)
    return key


def literal(key: object, nested: bool = False) -> str:
    """Python source for a literal key (a slice is written `1:` at the top of a subscript)."""
    if type(key) is slice:
        if nested:
            return f"slice({key.start!r}, {key.stop!r}, {key.step!r})"
        parts = ["" if p is None else repr(p) for p in (key.start, key.stop)]
        return ":".join(parts) + (f":{key.step!r}" if key.step is not None else "")
    if type(key) is tuple:
        return "(" + "".join(literal(k, True) + ", " for k in key) + ")"
    return repr(key)
