"""Side effects of a captured call, and the Python that reproduces them after the graph runs.

While capturing, the tracer appends an `Effect` for each visible change to the world outside the
call: attribute and item writes on outside objects, mutating methods of outside lists/dicts/sets
(append, extend, update, ...), writes to globals and closure cells, and `print`. In-place tensor
mutation (BatchNorm running statistics, `x.add_(1)` on an input) is not an effect here: the graph's
placeholders are the very tensors read from outside, so the graph mutates them itself.

`ValueWriter` turns a captured value (a tensor produced by the graph, a scalar, an outside object, a
container built during the call) into a Python expression evaluated on every hit; it is used for
effect values and for the call's return value.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import types
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.fx as fx

from jitlab.jit.effects.recipes import Recipe
from jitlab.jit.effects.snapshots import Frozen, FrozenWriter
from jitlab.jit.errors import Unsupported
from jitlab.jit.graph.numpy_values import is_numpy_number
from jitlab.jit.guards.builder import SCALAR_TYPES, VALUE_TYPES, GuardBuilder
from jitlab.jit.guards.kinds import dict_base, named_tuple_source
from jitlab.jit.guards.sources import Source, literal
from jitlab.jit.interpreter.core import plain_class
from jitlab.jit.reasons import ReasonKind


@dataclass
class Effect:
    """One outside change: `kind` in attr, rawattr (object.__setattr__), item, delattr, delitem, method,
    print, warn, call (a function `name` called with plain `args` through the trampoline `target`),
    global, cell."""

    kind: str
    target: object  # a Source (attr, item, method...) or a constant object (globals dict, cell)
    name: object = None  # attribute name, item key, method name
    args: tuple = ()
    kwargs: dict | None = None

    def describe(self) -> str:
        where = self.target.describe() if isinstance(self.target, Source) else type(self.target).__name__
        return f"{self.kind} {where} {self.name if self.name is not None else ''}".rstrip()


class ReplayRecorder(Protocol):
    """What rendering captured values (`ValueWriter` here, breaks/resume.py's `LiveWriter`) uses of the
    graph recorder: the node of a tensor, and the entry of a number kept in the graph. tests/jit/
    test_jit_owned_state.py checks that the real recorder has every member."""

    node_of: dict[int, tuple[torch.Tensor, fx.Node]]

    def node_for(self, tensor: torch.Tensor) -> fx.Node: ...

    def lazy_entry(self, value: object) -> tuple[Any, ...] | None: ...


class ReplayTracer(Protocol):
    """What rendering captured values needs of the tracer: the graph recorder (a tensor's node),
    whether a value was made by the call and where an outside one came from, and the recipes of
    objects native constructors made."""

    @property
    def recorder(self) -> ReplayRecorder: ...

    @property
    def recipes(self) -> dict[int, Recipe]: ...

    def source_of(self, value: object) -> Source | None: ...

    def is_fresh(self, obj: object) -> bool: ...


class ValueWriter:
    """Renders captured values as expressions over `outs` (graph outputs), guard variables and constants."""

    def __init__(self, builder: GuardBuilder, tracer: ReplayTracer) -> None:
        self.builder = builder
        self.tracer = tracer
        self.output_nodes: list[Any] = []
        self._index_of_node: dict[Any, int] = {}
        self.prelude: list[str] = []
        self._memo: dict[int, str] = {}

    @property
    def _frozen_writer(self) -> FrozenWriter:
        return FrozenWriter(self.write, lambda node: f"outs[{self.output_index(node)}]", self.builder.const)

    def output_index(self, node: fx.Node) -> int:
        index = self._index_of_node.get(node)
        if index is None:
            index = len(self.output_nodes)
            self.output_nodes.append(node)
            self._index_of_node[node] = index
        return index

    def write(self, value: object, depth: int = 0) -> str:
        if depth > 20:
            raise Unsupported("value nested too deeply to rebuild", ReasonKind.UNTRACKED_VALUE)
        if isinstance(value, Frozen):  # an effect's argument as it was when the effect happened
            return value.render(self._frozen_writer)
        t = type(value)
        if isinstance(value, torch.Tensor):
            node = self.tracer.recorder.node_for(value)
            refuse_made_tensor(value, node)
            return f"outs[{self.output_index(node)}]"
        lazy = self.tracer.recorder.lazy_entry(value)
        if lazy is not None:  # a data-dependent float or int computed by the graph
            return f"outs[{self.output_index(lazy[1])}]"
        if t in SCALAR_TYPES:
            if t in (int, str, bool, type(None)) or (
                t is float and value == value and abs(value) != float("inf")
            ):
                return repr(value)
            return self.builder.const(value)
        if type(value) is types.FunctionType and (value.__closure__ or "<locals>" in value.__qualname__):
            source = self.tracer.source_of(value)
            if self.tracer.is_fresh(value) or source is None or not self.builder.has_var(source):
                # made by this call (a lambda, a closure; or by native code, of unknown origin): its
                # cells hold this call's values, and every call makes a new one
                raise Unsupported(
                    f"cannot rebuild the function {value.__qualname__} made during the call",
                    ReasonKind.UNTRACKED_VALUE,
                )
            return self.builder.var(source)
        if self.tracer.is_fresh(t) or (t is type and self.tracer.is_fresh(value)):
            # a class statement of this call made it: every call makes a new class (and may give it
            # other attributes), which a cache hit would not
            made = value if t is type else t
            raise Unsupported(
                f"cannot rebuild the class {made.__qualname__} made during the call, or its objects",
                ReasonKind.UNTRACKED_VALUE,
            )
        if isinstance(value, VALUE_TYPES) or isinstance(
            value, (types.FunctionType, types.BuiltinFunctionType, type)
        ):
            return self.builder.const(value)
        if isinstance(value, types.ModuleType) or is_numpy_number(value):
            # a numpy number is immutable, and made from values the guards and re-checks fix
            return self.builder.const(value)
        source = self.tracer.source_of(value)
        if source is not None and not self.tracer.is_fresh(value):
            if not self.builder.has_var(source):
                raise Unsupported(f"outside {t.__name__} without guard", ReasonKind.UNTRACKED_VALUE)
            return self.builder.var(source)
        key = id(value)
        if key in self._memo:
            return self._memo[key]
        if t is tuple:
            expr = "(" + "".join(self.write(v, depth + 1) + ", " for v in value) + ")"
            return expr
        if t is torch.Size:
            return f"{self.builder.const(torch.Size)}(({''.join(self.write(v, depth + 1) + ', ' for v in value)}))"
        if t is slice:
            return f"slice({self.write(value.start)}, {self.write(value.stop)}, {self.write(value.step)})"
        if not self.tracer.is_fresh(value) and t is not tuple and not _is_namedtuple(value):
            recipe = self.tracer.recipes.get(key)
            if recipe is not None and recipe.obj is value:
                return self._rebuild(recipe, depth)
            raise Unsupported(f"cannot rebuild a {t.__name__} of unknown origin", ReasonKind.UNTRACKED_VALUE)
        if t is list:
            expr = "[" + ", ".join(self.write(v, depth + 1) for v in value) + "]"
        elif t is dict:
            items = ", ".join(
                f"{self.write(k, depth + 1)}: {self.write(v, depth + 1)}" for k, v in value.items()
            )
            expr = "{" + items + "}"
        elif t is set:
            expr = "{" + ", ".join(self.write(v, depth + 1) for v in value) + "}" if value else "set()"
        elif t is collections.OrderedDict and not vars(value):  # (no attributes set on it)
            items = ", ".join(
                f"({self.write(k, depth + 1)}, {self.write(v, depth + 1)})" for k, v in value.items()
            )
            expr = f"{self.builder.const(t, 'T')}([{items}])"
        elif _is_namedtuple(value):
            parts = [self.write(v, depth + 1) for v in value]
            expr = named_tuple_source(
                self.builder.const(t, "T"), self.builder.const(tuple.__new__, "NEW"), parts
            )
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = [f for f in dataclasses.fields(value) if f.init]
            if set(vars(value)) != {f.name for f in dataclasses.fields(value)}:
                raise Unsupported(f"dataclass {t.__name__} has extra attributes", ReasonKind.UNTRACKED_VALUE)
            if isinstance(value, dict) and not items_are_fields(value, fields):
                raise Unsupported(
                    f"a {t.__name__} whose items are not its fields set, in their order",
                    ReasonKind.UNTRACKED_VALUE,
                )
            args = ", ".join(f"{f.name}={self.write(getattr(value, f.name), depth + 1)}" for f in fields)
            expr = f"{self.builder.const(t, 'T')}({args})"
        elif plain_instance(value):
            return self._made_object(value, key, new_object, (), depth)
        elif (base := dict_base(t)) is not None:  # the program's dict subclass (tracing/dict_subclasses.py)
            return self._made_object(value, key, base.__new__, value.items(), depth, base.__setitem__)
        else:
            raise Unsupported(
                f"cannot rebuild a {t.__name__} created during the call", ReasonKind.UNTRACKED_VALUE
            )
        if t in (list, dict, set, collections.OrderedDict) or dataclasses.is_dataclass(value):
            name = f"r{len(self._memo)}"
            self.prelude.append(f"{name} = {expr}")
            self._memo[key] = name
            return name
        return expr

    def _made_object(
        self,
        value: object,
        key: int,
        make: object,
        items: Iterable[tuple[object, object]],
        depth: int,
        setitem: object = None,
    ) -> str:
        """Rebuild an object the call made in the prelude: `make(T)` (no `__init__`), then its items
        with `setitem` (a dict subclass's base's, not the class's own), then its attributes."""
        name = f"r{len(self._memo)}"
        self._memo[key] = name  # before its contents: they may refer back to the object
        self.prelude.append(
            f"{name} = {self.builder.const(make, 'NEW')}({self.builder.const(type(value), 'T')})"
        )
        items = list(items)
        store = self.builder.const(setitem, "SETITEM") if items else ""
        for item_key, item in items:
            self.prelude.append(
                f"{store}({name}, {self.write(item_key, depth + 1)}, {self.write(item, depth + 1)})"
            )
        for attr, item in vars(value).items():
            self.prelude.append(f"{name}.__dict__[{attr!r}] = {self.write(item, depth + 1)}")
        return name

    def _rebuild(self, recipe: Recipe, depth: int) -> str:
        """An object a native constructor made from these values: made again by the same call."""
        cls_name = self.builder.const(recipe.cls, "T")
        call = recipe.call_text(self.tracer.recipes, lambda v: self.write(v, depth + 1), cls_name)
        name = f"r{len(self._memo)}"
        self.prelude.append(f"{name} = {call}")
        self._memo[id(recipe.obj)] = name
        return name


def items_are_fields(value: dict, fields: list[dataclasses.Field]) -> bool:
    """Whether a dict dataclass (transformers' ModelOutput) holds exactly its non-None fields, in field
    order: what its constructor builds again. Items set after construction in another order, or
    under other keys, would come back differently."""
    names = [f.name for f in fields if getattr(value, f.name) is not None]
    return list(value) == names and all(value[name] is getattr(value, name) for name in names)


def plain_instance(value: object) -> bool:
    """Whether `value` is an instance of a plain Python class whose whole state is its `__dict__`
    (no `__slots__` holding state, no metaclass but type or ABCMeta, and made by `object.__new__`,
    also when the class's own `__new__` written in Python calls it): made during the call, it is
    rebuilt as a new object with the same attributes, as `copy` would."""
    t = type(value)
    if t.__module__ == "builtins" or not (plain_class(t) or _made_by_object_new(t)):
        return False
    if isinstance(value, torch.nn.Module) or not hasattr(value, "__dict__"):
        return False
    return all(not vars(base).get("__slots__", ()) for base in t.__mro__)  # `ABC` has empty slots


def _made_by_object_new(cls: type) -> bool:
    """A class with a `__new__` written in Python whose instances `object.__new__` can make (no
    built-in base with a layout of its own, such as `int` or `tuple`)."""
    if type(cls.__new__) is not types.FunctionType or type(cls) not in (type, abc.ABCMeta):
        return False
    try:
        object.__new__(cls)
    except TypeError:
        return False
    return True


def new_object(cls: type) -> Any:
    """A new instance of `cls` without running its `__init__`: its attributes are set after."""
    return object.__new__(cls)


def _is_namedtuple(value: object) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def refuse_made_tensor(value: torch.Tensor, node: fx.Node) -> None:
    """Raise Unsupported when a cache hit cannot give back `value`, a tensor that leaves the call (or
    lives across a break): the graph gives plain tensors without attributes, so an `nn.Parameter`
    made in the call (tracing/made_parameters.py) would come back as a plain tensor, and a tensor
    the call gave attributes (`t.stop_gradient = True`) without them."""
    if node.op == "placeholder":
        return  # the caller's own tensor, given back as it is
    if type(value) is torch.nn.Parameter:
        raise Unsupported(
            "an nn.Parameter made in the call leaves it (a cache hit would give a plain tensor)",
            ReasonKind.UNTRACKED_VALUE,
        )
    attributes = getattr(value, "__dict__", None)
    if attributes:
        raise Unsupported(
            f"a tensor made in the call leaves it with attributes set on it ({', '.join(map(str, attributes))}): "
            "a cache hit would give the graph's tensor without them",
            ReasonKind.UNTRACKED_VALUE,
        )


def render_effects(effects: list[Effect], writer: ValueWriter) -> list[str]:
    """Python statements reproducing `effects`, in order."""
    builder = writer.builder
    lines: list[str] = []
    for eff in effects:
        if eff.kind == "print":
            args = ", ".join(writer.write(a) for a in eff.args)
            kw = "".join(f", {k}={writer.write(v)}" for k, v in (eff.kwargs or {}).items())
            lines.append(f"print({args}{kw})")
            continue
        if eff.kind == "warn":  # warning_effects.py: warnings.warn called from the user's lines
            message, category, stacklevel = eff.args
            call = f"{builder.const(warnings.warn, 'WARN')}, ({message!r}, {builder.const(category, 'CATEGORY')}, {stacklevel})"
            lines.append(f"{builder.const(eff.target, 'WARN_FROM')}({call}, {{}})")
            continue
        if eff.kind == "call":  # logging_effects.py: a call of plain values from the user's lines
            call = (
                f"{builder.const(eff.name, 'CALLED')}, ({''.join(writer.write(a) + ', ' for a in eff.args)})"
            )
            lines.append(f"{builder.const(eff.target, 'CALL_FROM')}({call}, {{}})")
            continue
        if eff.kind == "global":
            lines.append(f"{builder.const(eff.target, 'G')}[{eff.name!r}] = {writer.write(eff.args[0])}")
            continue
        if eff.kind == "cell":
            lines.append(f"{builder.const(eff.target, 'CELL')}.cell_contents = {writer.write(eff.args[0])}")
            continue
        target = builder.var(eff.target)
        if eff.kind == "attr":
            lines.append(f"setattr({target}, {eff.name!r}, {writer.write(eff.args[0])})")
        elif eff.kind == "rawattr":  # the write a user __setattr__ ends with, without calling it again
            lines.append(
                f"{builder.const(object.__setattr__, 'SETATTR')}({target}, {eff.name!r}, {writer.write(eff.args[0])})"
            )
        elif eff.kind == "delattr":
            lines.append(f"delattr({target}, {eff.name!r})")
        elif eff.kind == "item":
            lines.append(f"{target}[{_key(eff.name, writer)}] = {writer.write(eff.args[0])}")
        elif eff.kind == "delitem":
            lines.append(f"del {target}[{_key(eff.name, writer)}]")
        elif eff.kind == "method":
            args = ", ".join(writer.write(a) for a in eff.args)
            lines.append(f"{target}.{eff.name}({args})")
        else:  # pragma: no cover - the tracer only creates the kinds above
            raise Unsupported(f"unknown effect {eff.kind}", ReasonKind.INTERNAL)
    # values first (containers rebuilt once), then the effects that use them
    return lines


def _key(key: object, writer: ValueWriter) -> str:
    if type(key) in (int, str):
        return literal(key)
    return writer.write(key)
