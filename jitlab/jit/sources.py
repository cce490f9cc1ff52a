"""Where an outside value came from: an argument, a global, a closure cell, an attribute chain, an item.

A source is a frozen, hashable description that can write itself as a Python expression over the
guard function's parameters (`args`, `kwargs`) and its named constants. It says nothing about what is
checked; that is `guards.py`'s job (the same split as TorchDynamo's sources and guards).
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from dataclasses import dataclass

Namer = Callable[["Source"], str]


class Source:
    """Base class: `expr(name)` renders the source, using `name(parent)` for sub-sources."""

    def expr(self, name: Namer) -> str:
        raise NotImplementedError

    @property
    def parent(self) -> Source | None:
        return None

    def describe(self) -> str:
        return self.expr(lambda s: s.describe())


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

    @property
    def parent(self) -> Source:
        return self.base

    def expr(self, name: Namer) -> str:
        if self.attr.isidentifier() and not keyword.iskeyword(self.attr):
            return f"{name(self.base)}.{self.attr}"
        return f"getattr({name(self.base)}, {self.attr!r})"


@dataclass(frozen=True)
class ItemSource(Source):
    """`base[key]` for a literal key (int, str, slice of ints)."""

    base: Source
    key: object

    @property
    def parent(self) -> Source:
        return self.base

    def expr(self, name: Namer) -> str:
        return f"{name(self.base)}[{literal(self.key)}]"


LITERAL_TYPES = (int, str, bool, type(None))


def is_literal_key(key: object) -> bool:
    if type(key) in LITERAL_TYPES:
        return True
    if type(key) is slice:
        return all(type(p) in (int, type(None)) for p in (key.start, key.stop, key.step))
    return False


def literal(key: object) -> str:
    """Python source for a literal key."""
    if type(key) is slice:
        parts = ["" if p is None else repr(p) for p in (key.start, key.stop)]
        text = ":".join(parts)
        return text + (f":{key.step!r}" if key.step is not None else "")
    return repr(key)
