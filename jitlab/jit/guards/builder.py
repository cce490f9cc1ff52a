"""What is checked about outside values, and the one generated guard function that checks it all.

Guard kinds (named as in TorchDynamo): TYPE_MATCH (exact type), ID_MATCH (same object),
EQUALS_MATCH (type and value of a Python scalar or string), TENSOR_MATCH (type, dtype, device,
shape, strides, requires_grad and dispatch keys, checked for all tensors at once by torch's C++
`TensorGuards`), LENGTH_CHECK, and EXPR (any boolean expression, e.g. "no hooks on this module").

`GuardBuilder` collects guards while a capture runs; `render()` turns them into Python statements that
assign each needed source once to a local variable and `return MISS` on the first failed check. The
statements become the head of the cache entry's function (see codegen.py).
"""

from __future__ import annotations

import math
import types
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import torch

from jitlab.jit.guards.sources import AttrSource, Source

SCALAR_TYPES = (int, float, bool, str, type(None), complex, bytes, type(Ellipsis))
# Py_TPFLAGS_HEAPTYPE: a class made by a class statement, whose instances may change class
_HEAP_TYPE = 1 << 9
VALUE_TYPES = (torch.dtype, torch.device, torch.layout, torch.memory_format)


def is_singleton(value: object) -> bool:
    """Whether `value` is None, True, False or Ellipsis: guarded by identity. Written out rather than
    searched in a tuple: a capture of a large model guards tens of thousands of values."""
    return value is None or value is True or value is False or value is Ellipsis


@dataclass(frozen=True)
class Guard:
    kind: str
    source: Source
    text: str  # human-readable form for explain()


class GuardBuilder:
    """Collects guards and the constants they need; renders them as Python statements."""

    def __init__(self) -> None:
        self.guards: list[Guard] = []
        self.constants: dict[str, Any] = {}
        self._const_ids: dict[int, str] = {}
        self._key_lists: dict[tuple[str | int, ...], str] = {}  # see key_list_const
        self._seen: set[tuple[str, Source, str]] = set()
        # a tuple's TYPE_MATCH (line and guard index) until its TUPLE_MATCH, which checks the type too,
        # takes its place; and the tuples so matched, whose type needs no check of its own
        self._tuple_type_at: dict[Source, tuple[int, int]] = {}
        self._tuple_matched: set[Source] = set()
        self._type_fixed: set[Source] = set()  # see type_fixed
        self._lines: list[str] = []
        self._var_of: dict[Source, str] = {}
        self._through_dict: dict[Source, Source] = {}  # see read_through_instance_dict
        self._counts: dict[Any, int] = {}  # see count
        self.tensor_sources: list[Source] = []
        self._tensor_source_set: set[Source] = set()  # the same, for the membership test
        self.tensor_meta: list[tuple[Any, ...]] = []
        self.line_texts: dict[str, str] = {}  # a check's line -> its guard as explain() shows it (misses)

    # ---------------------------------------------------------- constants
    def const(self, value: object, hint: str = "C") -> str:
        """A name for `value` in the generated code's namespace (one name per object)."""
        key = id(value)
        name = self._const_ids.get(key)
        if name is None:
            name = f"{hint}{len(self.constants)}"
            self.constants[name] = value
            self._const_ids[key] = name
        return name

    def key_list_const(self, value: list) -> str:
        """The constant for a list of str or int keys (a module table's names, a dict's keys), one
        per distinct list: a module tree iterated at several levels (nested `nn.Sequential`s) reads
        the same tables again, and each read made a new list, hence a new constant and a duplicate
        guard (a third of regnet's guards). Lists equal item by item and type by type compare
        equal to the same values, so sharing one changes no check's outcome."""
        key = tuple(value)
        name = self._key_lists.get(key)
        if name is None:
            name = self._key_lists[key] = self.const(value)
        return name

    def var(self, source: Source) -> str:
        """The local variable holding `source` in the generated code (assigned on first use)."""
        name = self._var_of.get(source)
        if name is None:
            held_in = self._through_dict.get(source)
            if held_in is not None:
                expr = f"{self.var(held_in)}[{source.attr!r}]"  # type: ignore[attr-defined]
            else:
                expr = source.expr(self.var)
            if source.parent is None:
                return expr
            name = f"v{len(self._var_of)}"
            self._var_of[source] = name
            self._lines.append(f"{name} = {expr}")
        return name

    def read_through_instance_dict(self, source: Source, instance_dict: Source | None = None) -> None:
        """Read `obj.name` (an `AttrSource` or `GenericAttrSource`) in the generated code as
        `obj.__dict__['name']`, with the instance dict (by default `obj.__dict__`; `instance_dict`
        when reading that runs user code) in a variable of its own. The caller has guarded what
        makes the two the same: `obj`'s exact class (its identity check does), that no class of its
        method resolution order defines `name` (a data descriptor there would come first) and that
        the class takes attributes the usual way. On an `nn.Module`, whose class defines
        `__getattr__`, every attribute read takes CPython's slow path (about 23 ns, against 10 for a
        dict item); a model's hit reads about a thousand."""
        if source not in self._var_of:
            self._through_dict[source] = instance_dict or AttrSource(source.base, "__dict__")  # type: ignore[attr-defined]

    def count(self, key: Hashable) -> int:
        """How many times `key` was counted in this builder, this time included (a rendering choice
        that pays off only from some number of reads on, see read_through_instance_dict)."""
        n = self._counts[key] = self._counts.get(key, 0) + 1
        return n

    def has_var(self, source: Source) -> bool:
        return source in self._var_of or source.parent is None

    def _add(self, kind: str, source: Source, check: str, text: str) -> bool:
        """Add the guard unless it is there already; whether it was added."""
        key = (kind, source, check)
        if key in self._seen:
            return False
        self._seen.add(key)
        line = f"if not ({check}): return MISS"
        self._lines.append(line)
        self.guards.append(Guard(kind, source, text))
        self.line_texts[line] = f"{kind}: {text}"
        return True

    # ---------------------------------------------------------- guard kinds
    def type_match(self, source: Source, value: object) -> None:
        is_tuple = type(value) is tuple
        if is_tuple and source in self._tuple_matched:  # its TUPLE_MATCH checks the type already
            return
        v = self.var(source)
        t = self.const(type(value), "T")
        added = self._add(
            "TYPE_MATCH",
            source,
            f"type({v}) is {t}",
            f"type({source.describe()}) is {type(value).__qualname__}",
        )
        if added and is_tuple:
            self._tuple_type_at[source] = (len(self._lines) - 1, len(self.guards) - 1)
        self._type_fixed.add(source)

    def type_fixed(self, source: Source) -> bool:
        """Whether a guard added so far fixes the exact class of the value at `source` (its type or
        identity check, which for a class statement's instance checks the class too)."""
        return source in self._type_fixed

    def id_match(self, source: Source, value: object) -> None:
        """Guard that `source` is `value`; for an instance of a class statement's class, also that it
        is still of that class: `obj.__class__ = Other` (torch's parametrize does it to modules)
        changes the object's methods and forward, which the guards of class lookups read from the
        old class's namespace."""
        v = self.var(source)
        c = self.const(value, "O")
        t = type(value)
        check = f"{v} is {c}"
        if t.__flags__ & _HEAP_TYPE and not isinstance(value, (type, types.ModuleType)):
            check += f" and type({v}) is {self.const(t, 'T')}"
            self._type_fixed.add(source)
        self._add("ID_MATCH", source, check, f"{source.describe()} is <{t.__qualname__} at {id(value):#x}>")

    def equals_match(self, source: Source, value: object) -> None:
        """Guard the type and value of a scalar, string, dtype or device. The very object seen at
        capture passes first, by identity (a module's `eps` or `momentum` is the same float object
        on every call): half the cost of the type and value test, which runs only for another object."""
        v = self.var(source)
        if is_singleton(value):
            self._add("EQUALS_MATCH", source, f"{v} is {value!r}", f"{source.describe()} == {value!r}")
            return
        if type(value) is float and not math.isfinite(value):
            check = f"type({v}) is float and {v} == {self.const(value)}"
        elif type(value) is float and value == 0.0:  # -0.0 == 0.0, but `1 / (x * s)` tells them apart
            check = f"type({v}) is float and {v}.hex() == {value.hex()!r}"
        elif type(value) in (int, float, str):
            check = f"type({v}) is {type(value).__name__} and {v} == {value!r}"
        else:
            check = f"type({v}) is {self.const(type(value), 'T')} and {v} == {self.const(value)}"
        check = f"{v} is {self.const(value, 'S')} or ({check})"
        self._add("EQUALS_MATCH", source, check, f"{source.describe()} == {value!r}")

    def tensor_match(self, source: Source, value: torch.Tensor) -> None:
        if source in self._tensor_source_set:  # a list scan here was quadratic in the model's size
            return
        self.var(source)
        self.tensor_sources.append(source)
        self._tensor_source_set.add(source)
        self.tensor_meta.append(
            (tuple(value.shape), value.stride(), value.dtype, value.device, value.requires_grad, type(value))
        )
        self.guards.append(
            Guard(
                "TENSOR_MATCH",
                source,
                f"{source.describe()}: {value.dtype} {tuple(value.shape)} stride={value.stride()} "
                f"device={value.device} requires_grad={value.requires_grad}",
            )
        )

    def scalar_tuple(self, source: Source, value: tuple) -> None:
        """Guard a tuple of ints, bools, strings and None (a conv's stride, an output size) in one
        check: the very tuple the capture saw, which a module keeps from call to call, and else
        an equal one with items of the same types (`(1.0, 1)` and `(True, 1)` equal `(1, 1)`). One
        line instead of a length check and a check per item: a conv's three tuples cost 18."""
        v = self.var(source)
        same = self.const(value, "O")
        types = self.const(tuple(map(type, value)), "TY")
        check = (
            f"{v} is {same} or (type({v}) is tuple and {v} == {same} and tuple(map(type, {v})) == {types})"
        )
        text = f"{source.describe()} == {value!r}"
        self._tuple_matched.add(source)
        at = self._tuple_type_at.pop(source, None)
        if at is None or ("TUPLE_MATCH", source, check) in self._seen:
            self._add("TUPLE_MATCH", source, check, text)
            return
        # the tuple's type was checked earlier (a conv's `self.stride` read, then handed to native
        # code): this stronger check takes that line's place, so every check between still runs on a
        # tuple, and the type is not checked twice (three lines per conv on every call)
        line, guard = at
        self._seen.add(("TUPLE_MATCH", source, check))
        self._lines[line] = f"if not ({check}): return MISS"
        self.guards[guard] = Guard("TUPLE_MATCH", source, text)
        self.line_texts[self._lines[line]] = f"TUPLE_MATCH: {text}"

    def length(self, source: Source, n: int, expr: str = "len({v})") -> None:
        v = self.var(source)
        check = expr.format(v=v) + f" == {n}"
        self._add("LENGTH_CHECK", source, check, expr.format(v=source.describe()) + f" == {n}")

    def check(self, source: Source, check: str, text: str, described: Source | None = None) -> None:
        """Guard that the Python expression `check` (with `{v}` for the source) is true; explain()
        shows `text` with `{v}` for `described` (by default the source)."""
        v = self.var(source)
        self._add("EXPR", source, check.format(v=v), text.format(v=(described or source).describe()))

    def expr(self, source: Source, template: str, value: object = True, described: str | None = None) -> None:
        """Guard that `template.format(v=<source>) == value` (value a literal or a constant);
        `described`, when given, is the template explain() shows (one naming a constant by what it is)."""
        v = self.var(source)
        lhs = template.format(v=v)
        if is_singleton(value):
            check = f"({lhs}) is {value!r}"
        elif type(value) in (int, str):
            check = f"({lhs}) == {value!r}"
        elif type(value) is list and all(type(k) is str or type(k) is int for k in value):
            check = f"({lhs}) == {self.key_list_const(value)}"
        else:
            check = f"({lhs}) == {self.const(value)}"
        self._add(
            "EXPR", source, check, f"{(described or template).format(v=source.describe())} == {value!r}"
        )

    def global_state(self, check: str, text: str) -> None:
        """A check on global state (grad mode, global module hooks)."""
        from jitlab.jit.guards.sources import ConstSource

        self._add("GLOBAL_STATE", ConstSource("<global>"), check, text)

    def distinct_tensors(self) -> None:
        """Guard that the tensor inputs are distinct objects (needed when the graph mutates them).
        The tensor check `render` ends with does it: torch's TensorGuards rejects a tensor object
        that comes twice among its arguments (tests/jit/test_jit_guards.py, aliased arguments). A
        set of their ids built in Python cost about 85 µs per call on a model of 263 tensors."""
        if len(self.tensor_sources) > 1:
            self.guards.append(
                Guard("NO_ALIASING", self.tensor_sources[0], "the tensor inputs are distinct objects")
            )

    def shared_memory(self, check: str, text: str) -> None:
        """Guard the Python expression `check` over the tensor inputs: which of them share memory
        (entries/input_memory.py)."""
        self._add("SHARED_MEMORY", self.tensor_sources[0] if self.tensor_sources else None, check, text)

    # ---------------------------------------------------------- rendering
    def render(self) -> list[str]:
        """The guard statements, ending with the tensor check (one C++ call for all tensors)."""
        lines = list(self._lines)
        if self.tensor_meta:
            from torch._C._dynamo.guards import TensorGuards

            templates = [_template(*meta) for meta in self.tensor_meta]
            checker = TensorGuards(
                *templates,
                dynamic_dims_sizes=[list(m[0]) for m in self.tensor_meta],
                dynamic_dims_strides=[list(m[1]) for m in self.tensor_meta],
            )
            name = self.const(checker.check, "TG")  # also False when a tensor object comes twice
            args = ", ".join(self.var(s) for s in self.tensor_sources)
            lines.append(f"if not {name}({args}): return MISS")
        return lines

    def describe(self) -> list[str]:
        return [f"{g.kind}: {g.text}" for g in self.guards]

    def miss_texts(self) -> dict[str, str]:
        """What explains a miss at each line of the rendered guards (frontend/misses.py): the guard
        of each check line, the source of each variable, and the tensor check's sources."""
        texts = dict(self.line_texts)
        for source, name in self._var_of.items():
            texts[name] = source.describe()
        texts["<tensors>"] = "\n".join(s.describe() for s in self.tensor_sources)
        return texts


def _template(shape, stride, dtype, device, requires_grad, cls) -> torch.Tensor:
    """A tensor with the captured metadata, for TensorGuards (which also checks the exact type)."""
    with torch.no_grad():
        t = torch.empty_strided(shape, stride, dtype=dtype, device=device)
    if cls is torch.nn.Parameter:
        return torch.nn.Parameter(t, requires_grad=requires_grad)
    t.requires_grad_(requires_grad)
    if cls is not torch.Tensor:
        t = t.as_subclass(cls)
    return t
