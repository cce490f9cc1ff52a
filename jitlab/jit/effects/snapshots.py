"""The values a side effect saw, taken when the effect happened in the program.

A replayed effect runs after the graph, at the end of the call (or of its segment), but it must see
what the program saw when it made the effect: `print(lst)` followed by `lst.append(2)` prints `[1]`,
`self.log.extend(items)` followed by `items.append(2)` extends the log by the old items only, and
`print(y)` followed by `y.add_(1)` prints `y` before the addition. So an effect whose arguments are
*consumed* at once (printed, or copied into an outside container by `extend`/`update` or a slice
assignment `lst[i:j] = items`) keeps a
*frozen* copy of them, made while capturing:

- a container made during the call (list, tuple, dict, set, frozenset, named tuple, dataclass) is
  copied item by item, as it is now (deeply for `print`, one level for `extend`/`update`, whose
  items keep their identity in the container they are copied into);
- a tensor becomes the graph value it has now: a `clone` recorded in the graph at this point, which
  the planner drops again when nothing changes the tensor later in the call; a tensor that requires
  gradients is not cloned (its printed `grad_fn` would change) and a later in-place change of it makes
  the capture uncacheable instead;
- outside objects (arguments, module state) stay references, read when the effect is replayed, which
  happens in program order with the other replayed effects; a tensor inside them changed later by the
  graph makes the capture uncacheable.

Values that are *kept* by the effect (`self.last = lst`, `self.log.append(lst)`, a global) need none
of this: the program's later changes to them are changes to the very object the outside place holds,
so the object rebuilt with its final content is what eager code leaves behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.fx as fx

from jitlab.jit.errors import Unsupported
from jitlab.jit.guards.kinds import named_tuple_source
from jitlab.jit.guards.sources import Source
from jitlab.jit.reasons import ReasonKind

# list.extend, dict.update and set.update copy their argument's items when they are called
CONSUMING_METHODS = frozenset({"extend", "update"})
_MAX_DEPTH = 12


class Frozen:
    """A value as it was when an effect used it; `render` writes it as a Python expression."""

    def render(self, writer: FrozenWriter) -> str:  # pragma: no cover - every subclass renders
        raise NotImplementedError


@dataclass
class FrozenWriter:
    """What rendering needs from the entry's value writer: `write(value)`, the expression of a graph
    value (`node(fx_node)`) and a name for a constant (`const(value, hint)`)."""

    write: Callable[[Any], str]
    node: Callable[[fx.Node], str]
    const: Callable[..., str]


@dataclass
class FrozenTensor(Frozen):
    """A tensor as it was: `node` is the graph value printed (a clone taken then, or the tensor's own
    node once the planner found that nothing changed it later)."""

    node: fx.Node
    original: fx.Node
    tensor: torch.Tensor
    version: int
    cloned: bool

    def render(self, writer: FrozenWriter) -> str:
        return writer.node(self.node)


@dataclass
class FrozenSequence(Frozen):
    kind: type  # list, tuple, set, frozenset or a named tuple class
    items: tuple

    def render(self, writer: FrozenWriter) -> str:
        parts = [writer.write(item) for item in self.items]
        if self.kind is list:
            return "[" + ", ".join(parts) + "]"
        if self.kind is tuple:
            return "(" + "".join(p + ", " for p in parts) + ")"
        if self.kind is set:
            return "{" + ", ".join(parts) + "}" if parts else "set()"
        if self.kind is frozenset:
            return f"frozenset(({''.join(p + ', ' for p in parts)}))"
        return named_tuple_source(writer.const(self.kind, "T"), writer.const(tuple.__new__, "NEW"), parts)


@dataclass
class FrozenDict(Frozen):
    items: tuple  # (key, value) pairs

    def render(self, writer: FrozenWriter) -> str:
        return "{" + ", ".join(f"{writer.write(k)}: {writer.write(v)}" for k, v in self.items) + "}"


@dataclass
class FrozenObject(Frozen):
    """An instance of a dataclass made during the call, rebuilt without running its `__init__`."""

    cls: type
    attrs: tuple  # (name, value) pairs

    def render(self, writer: FrozenWriter) -> str:
        attrs = "{" + ", ".join(f"{name!r}: {writer.write(v)}" for name, v in self.attrs) + "}"
        return f"{writer.const(rebuilt_object, 'NEW')}({writer.const(self.cls, 'T')}, {attrs})"


def rebuilt_object(cls: type, attrs: dict[str, Any]) -> Any:
    """An instance of `cls` with the given attributes, made without running `__init__` (which could
    have effects of its own, or check its arguments differently)."""
    obj = object.__new__(cls)
    obj.__dict__.update(attrs)
    return obj


class FreezingRecorder(Protocol):
    """What the freezer uses of the graph recorder: the node of a tensor and of its clone, whether
    tensor operations are recorded now (paused, or inside an opaque call), and the graph, from which
    an unneeded clone is erased. tests/jit/test_jit_owned_state.py checks the real recorder."""

    graph: fx.Graph
    node_of: dict[int, tuple[torch.Tensor, fx.Node]]
    paused: int
    opaque: int
    op_count: int

    def node_for(self, tensor: torch.Tensor) -> fx.Node: ...

    def pause(self) -> contextlib.AbstractContextManager[None]: ...


class FreezingTracer(Protocol):
    """What the freezer needs of the tracer: the graph recorder (to clone a tensor in the graph),
    whether a value was made by the call and where an outside one came from, and noting a problem."""

    @property
    def recorder(self) -> FreezingRecorder: ...

    def source_of(self, value: object) -> Source | None: ...

    def is_fresh(self, obj: object) -> bool: ...

    def problem(self, message: str, kind: ReasonKind) -> None: ...


class Freezer:
    """Freezes effect arguments for one capture; keeps the tensors it saw for the planner's check."""

    def __init__(self, tracer: FreezingTracer) -> None:
        self.tracer = tracer
        self.tensors: list[FrozenTensor] = []
        self.contents: list[tuple[Any, Any]] = []  # (object made by the call, its items when printed)

    def consumed(self, value: object, deep: bool = True) -> Any:
        """`value` as the effect sees it now (see the module docstring); `deep=False` copies one level
        of a container made during the call (its items keep their identity)."""
        if not deep and not isinstance(value, (list, tuple, dict, set, frozenset)):
            return value
        try:
            return self._freeze(value, deep, 0)
        except Unsupported as exc:  # the call goes on (it may already have had effects): no entry
            self.tracer.problem(exc.reason, exc.kind)
            return value
        except Exception as exc:  # a bug here must cost the cache entry, never the user's call
            self.tracer.problem(
                f"internal error while freezing a printed value: {type(exc).__name__}: {exc}",
                ReasonKind.INTERNAL,
            )
            return value

    def _freeze(self, value: object, deep: bool, depth: int) -> Any:
        if isinstance(value, torch.Tensor):
            return self._tensor(value)
        if depth > _MAX_DEPTH:
            self.tracer.problem(
                "a value printed or copied by the call is nested too deeply", ReasonKind.UNTRACKED_VALUE
            )
            return value
        t = type(value)
        fresh = self.tracer.is_fresh(value)
        if not fresh:
            if self.tracer.source_of(value) is not None and t in (list, tuple, dict, set, frozenset):
                self._watch(value, depth)  # an outside container: read live when replayed
            elif t is tuple or (isinstance(value, tuple) and hasattr(t, "_fields")):
                # tuples are made by the call without being tracked: their items may be fresh
                return self._sequence(t, value, deep, depth)
            return value
        if t in (list, tuple, set, frozenset) or (isinstance(value, tuple) and hasattr(t, "_fields")):
            return self._sequence(t, value, deep, depth)
        if t is dict:
            items = tuple((k, self._freeze(v, deep, depth + 1) if deep else v) for k, v in value.items())
            return FrozenDict(items)
        if dataclasses.is_dataclass(value) and not isinstance(value, type) and hasattr(value, "__dict__"):
            attrs = tuple(
                (name, self._freeze(v, deep, depth + 1) if deep else v) for name, v in vars(value).items()
            )
            return FrozenObject(t, attrs)
        return value

    def _sequence(self, t: type, value: Iterable[object], deep: bool, depth: int) -> FrozenSequence:
        items = tuple(self._freeze(v, deep, depth + 1) if deep else v for v in value)
        return FrozenSequence(t, items)

    def _watch(self, value: list | tuple | dict | set | frozenset, depth: int) -> None:
        """What an outside container printed live holds must not change later in the call: its
        tensors (version counters) and the containers and objects the call made and put in it
        (their items now, compared with their items at the end of the capture)."""
        if depth > _MAX_DEPTH:
            self.tracer.problem(
                "a value printed or copied by the call is nested too deeply", ReasonKind.UNTRACKED_VALUE
            )
            return
        items = value.values() if type(value) is dict else value
        for item in items:
            if isinstance(item, torch.Tensor):
                self._remember(item, None, cloned=False)
                continue
            fresh = self.tracer.is_fresh(item)
            if fresh and (type(item) in (list, dict, set) or hasattr(item, "__dict__")):
                self.contents.append((item, _content(item)))
            if type(item) in (list, tuple, dict, set, frozenset):
                self._watch(item, depth + 1)
            elif fresh and hasattr(item, "__dict__") and not isinstance(item, type):
                self._watch(vars(item), depth + 1)

    def _tensor(self, tensor: torch.Tensor) -> Any:
        recorder = self.tracer.recorder
        node = recorder.node_for(tensor)
        if tensor.requires_grad or recorder.paused or recorder.opaque:
            return self._remember(tensor, node, cloned=False)
        copy = tensor.clone()  # recorded: the graph keeps the value as it is now
        known = recorder.node_of.get(id(copy))
        if known is None or known[0] is not copy:
            return self._remember(tensor, node, cloned=False)
        return self._remember(tensor, node, cloned=True, clone_node=known[1])

    def _remember(
        self, tensor: torch.Tensor, node: fx.Node | None, cloned: bool, clone_node: fx.Node | None = None
    ) -> FrozenTensor:
        with self.tracer.recorder.pause():  # reading the version counter is no read of tensor data
            version = tensor._version
        frozen = FrozenTensor(
            node=clone_node if cloned else node,  # type: ignore[arg-type]
            original=node,  # type: ignore[arg-type]
            tensor=tensor,
            version=version,
            cloned=cloned,
        )
        self.tensors.append(frozen)
        return frozen

    def settle(self, erase: bool, boundaries: list[Any]) -> None:
        """After the capture: a frozen tensor that was not cloned must be unchanged since the effect;
        a clone of a tensor that nothing changed later is dropped (`erase`, before any effect is
        rendered), and the marks of later `boundaries` (graph breaks) move back by one."""
        recorder = self.tracer.recorder
        if any(not _same_content(_content(obj), before) for obj, before in self.contents):
            self.tracer.problem(
                "an outside container is printed (or copied out) and something the call put in it "
                "changes later in the call",
                ReasonKind.SIDE_EFFECT,
            )
        for frozen in self.tensors:
            changed = frozen.tensor._version != frozen.version
            if not frozen.cloned:
                if changed:
                    self.tracer.problem(
                        "a tensor is printed (or copied out) and changed in place later in the call "
                        "(it requires grad or sits in an outside container)",
                        ReasonKind.SIDE_EFFECT,
                    )
                continue
            if changed or not erase or frozen.node.users:
                continue
            ops = [n for n in recorder.graph.nodes if n.op != "placeholder"]
            index = ops.index(frozen.node)
            recorder.graph.erase_node(frozen.node)
            recorder.op_count -= 1
            for boundary in boundaries:
                if boundary.mark > index:
                    boundary.mark -= 1
            frozen.node = frozen.original
            frozen.cloned = False


def _content(obj: object) -> tuple[frozenset | tuple, tuple]:
    """What a list, dict or set holds, or an object's attributes, now: (keys, values); the values
    are compared by identity, the keys by equality."""
    t = type(obj)
    if t is set:
        return frozenset(obj), ()
    if t is list:
        return (), tuple(obj)
    items = obj if t is dict else vars(obj)
    return tuple(items), tuple(items.values())


def _same_content(now: tuple, before: tuple) -> bool:
    (keys, values), (old_keys, old_values) = now, before
    return (
        keys == old_keys
        and len(values) == len(old_values)
        and all(a is b for a, b in zip(values, old_values))
    )
