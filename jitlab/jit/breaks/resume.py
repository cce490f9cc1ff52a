"""Rebuilding the program's state at a graph break, and running the rest of the call from there.

A cache entry with graph breaks (see segments.py) re-checks guards after each break. When such a
check fails, the graphs and effects before the break have already run, so the call cannot start
over: it *deoptimises*. Every break therefore keeps, rendered while capturing, the state of the
interpreted frames at that point (locals, value stack, next instruction) as Python expressions over
the cache entry's local variables (graph outputs, guard variables, the break's result). `resume`
rebuilds those frames and runs the remaining bytecode with the interpreter, calling everything they
call natively, as eager Python would.

`LiveWriter` renders live values: tensors as the graph outputs that compute them, outside objects as
the guard variables that hold them, objects made during the call rebuilt from their content
(lists, dicts, sets, plain objects, cells, closures), iterators from their `__reduce__`. A value it
cannot rebuild raises `Unsupported`: that place cannot be a break.
"""

from __future__ import annotations

import dataclasses
import itertools
import types
from collections.abc import Callable
from typing import Any

import torch

from jitlab.jit.effects.recipes import Recipe
from jitlab.jit.effects.replay import ReplayTracer, items_are_fields, refuse_made_tensor
from jitlab.jit.effects.snapshots import Frozen, FrozenWriter
from jitlab.jit.errors import Unsupported
from jitlab.jit.graph.data_values import DataInt
from jitlab.jit.guards.builder import SCALAR_TYPES, VALUE_TYPES, GuardBuilder
from jitlab.jit.guards.kinds import named_tuple_source
from jitlab.jit.interpreter.frame import NULL, Frame
from jitlab.jit.interpreter.hooks import Hooks
from jitlab.jit.interpreter.resumption import ResumePoint, run_frames
from jitlab.jit.reasons import ReasonKind

# iterators rebuilt from `__reduce__` (callable, args[, state]): builtins whose reduce is exact
_REDUCIBLE_ITERATORS = tuple(
    type(it)
    for it in (
        iter([]), iter(()), iter(range(0)), iter(range(2**70)), reversed([]), iter(""), iter({}),
        iter({}.values()), iter({}.items()), iter(set()), enumerate([]), zip(), map(len, []),
        filter(None, []), itertools.count(), itertools.repeat(0),
    )
)  # fmt: skip
_DESCRIPTORS = (
    types.MethodDescriptorType, types.WrapperDescriptorType, types.ClassMethodDescriptorType,
    types.GetSetDescriptorType, types.MemberDescriptorType,
)  # fmt: skip
_GRAD_MODE_MANAGERS = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled)


def rebuild_reduced(fn: Callable[..., Any], args: tuple, state: object) -> Any:
    """`fn(*args)` then `__setstate__(state)`: an iterator rebuilt at the position it had."""
    obj = fn(*args)
    if state is not None:
        obj.__setstate__(state)
    return obj


def new_object(cls: type, attrs: dict[str, Any] | None = None) -> Any:
    """An instance of `cls` made without running `__init__`, with the given attributes."""
    obj = object.__new__(cls)
    if attrs:
        obj.__dict__.update(attrs)
    return obj


def new_cell(*contents: object) -> types.CellType:
    return types.CellType(*contents)


def new_function(code, globals_, name, defaults, closure, kwdefaults, qualname) -> types.FunctionType:
    fn = types.FunctionType(code, globals_, name, defaults, closure)
    fn.__kwdefaults__ = kwdefaults
    fn.__qualname__ = qualname
    return fn


class LiveWriter:
    """Renders values live during a capture as expressions over the cache entry's local variables.

    `node_name(node)` gives the local variable holding a graph value (and marks it as an output of
    its graph). `resolve(value)` gives the variable of an outside object (as the program read it),
    or None. Objects created during the call are rebuilt once each (`prefix` + number, in
    `prelude`), so shared objects stay shared. `closures=False` refuses closures with cells: code
    run natively at a break could change a cell that the interpreted frames then read unguarded.
    """

    def __init__(
        self,
        builder: GuardBuilder,
        tracer: ReplayTracer,
        node_name: Callable[[Any], str],
        resolve: Callable[[Any], str | None],
        prefix: str,
        closures: bool = True,
    ) -> None:
        self.builder = builder  # const() and var(); render_effects uses it for effect targets
        self.tracer = tracer
        self.node_name = node_name
        self.resolve = resolve
        self.prefix = prefix
        self.closures = closures
        self.prelude: list[str] = []
        self.memo: dict[int, tuple[Any, str]] = {}

    # ------------------------------------------------------------ helpers
    def const(self, value: object, hint: str = "C") -> str:
        return self.builder.const(value, hint)

    def _remember(self, value: object) -> str:
        name = f"{self.prefix}{len(self.memo)}"
        self.memo[id(value)] = (value, name)
        return name

    def _tensor(self, value: torch.Tensor) -> str:
        recorder = self.tracer.recorder
        known = recorder.node_of.get(id(value))
        if known is None or known[0] is not value:
            raise Unsupported(
                f"a tensor of unknown origin (shape {tuple(value.shape)}) is live", ReasonKind.UNTRACKED_VALUE
            )
        refuse_made_tensor(value, known[1])
        return self.node_name(known[1])

    # ------------------------------------------------------------ writing
    def write(self, value: object, depth: int = 0, loose: bool = False) -> str:
        """A Python expression for `value`; `loose` lets lists of unknown origin be rebuilt (their
        identity cannot matter: they are only reachable through an iterator being rebuilt)."""
        if depth > 24:
            raise Unsupported("a value nested too deeply to rebuild is live", ReasonKind.UNTRACKED_VALUE)
        if isinstance(value, Frozen):  # an effect's argument as it was when the effect happened
            return value.render(FrozenWriter(self.write, self.node_name, self.const))
        t = type(value)
        if isinstance(value, torch.Tensor):
            return self._tensor(value)
        recorder = self.tracer.recorder
        lazy = recorder.lazy_entry(value)
        if lazy is not None:
            return self.node_name(lazy[1])
        if t is DataInt:
            return repr(int(value))  # a data-dependent int already re-checked (a speculation)
        if t in SCALAR_TYPES:
            if t in (int, str, bool, type(None)) or (
                t is float and value == value and abs(value) != float("inf")
            ):
                return repr(value)
            return self.const(value)
        if value is NULL:
            return self.const(NULL, "NULL")
        if isinstance(value, (VALUE_TYPES, types.ModuleType, type, _DESCRIPTORS)):
            return self.const(value)
        outside = self.resolve(value)
        if outside is not None:
            return outside
        known = self.memo.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        if t is tuple:
            return "(" + "".join(self.write(v, depth + 1, loose) + ", " for v in value) + ")"
        if t is torch.Size:
            return f"{self.const(torch.Size)}(({''.join(self.write(v, depth + 1) + ', ' for v in value)}))"
        if t is slice:
            parts = (self.write(p, depth + 1) for p in (value.start, value.stop, value.step))
            return f"slice({', '.join(parts)})"
        if t is range:
            return f"range({value.start!r}, {value.stop!r}, {value.step!r})"
        if isinstance(value, tuple) and hasattr(t, "_fields"):
            parts = [self.write(v, depth + 1) for v in value]
            return named_tuple_source(self.const(t, "T"), self.const(tuple.__new__, "NEW"), parts)
        fresh = self.tracer.is_fresh(value)
        if t in (list, dict, set) and (fresh or loose):
            return self._container(value, depth)
        if t is types.CellType:
            return self._cell(value, depth) if fresh else self.const(value, "CELL")
        if t is types.FunctionType:
            return self._function(value, depth) if fresh else self.const(value, "F")
        if t is types.MethodType:
            return f"{self.const(types.MethodType, 'T')}({self.write(value.__func__, depth + 1)}, {self.write(value.__self__, depth + 1)})"
        if t in (types.BuiltinMethodType, types.MethodWrapperType):
            owner = value.__self__
            if owner is None or isinstance(owner, (types.ModuleType, type)):
                return self.const(value)
            return f"getattr({self.write(owner, depth + 1)}, {value.__name__!r})"
        if t in _REDUCIBLE_ITERATORS:
            return self._reduced(value, depth)
        if t in _GRAD_MODE_MANAGERS:
            return self._object(value, depth)
        if fresh and _plain_instance(value):
            return self._object(value, depth)
        if fresh and dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._dataclass(value, depth)
        recipe = self.tracer.recipes.get(id(value))
        if recipe is not None and recipe.obj is value:  # made by a native constructor (recipes.py)
            return self._made_again(recipe, depth)
        raise Unsupported(
            f"a {t.__name__} that jitlab.jit cannot rebuild is live", ReasonKind.UNTRACKED_VALUE
        )

    def _dataclass(self, value: object, depth: int) -> str:
        """A dataclass the call made (transformers' `ModelOutput` live at a break in Longformer):
        made again by its constructor from its fields, as a cache entry rebuilds one it returns."""
        fields = [f for f in dataclasses.fields(value) if f.init]
        if set(vars(value)) != {f.name for f in dataclasses.fields(value)} or (
            isinstance(value, dict) and not items_are_fields(value, fields)
        ):
            raise Unsupported(
                f"a {type(value).__name__} that jitlab.jit cannot rebuild is live", ReasonKind.UNTRACKED_VALUE
            )
        args = ", ".join(f"{f.name}={self.write(getattr(value, f.name), depth + 1)}" for f in fields)
        name = self._remember(value)
        self.prelude.append(f"{name} = {self.const(type(value), 'T')}({args})")
        return name

    def _made_again(self, recipe: Recipe, depth: int) -> str:
        call = recipe.call_text(
            self.tracer.recipes, lambda v: self.write(v, depth + 1), self.const(recipe.cls, "T")
        )
        name = self._remember(recipe.obj)
        self.prelude.append(f"{name} = {call}")
        return name

    def _container(self, value: list | dict | set, depth: int) -> str:
        t = type(value)
        name = self._remember(value)
        if t is list:
            items = ", ".join(self.write(v, depth + 1, True) for v in value)
            self.prelude.append(f"{name} = [{items}]")
        elif t is dict:
            items = ", ".join(
                f"{self.write(k, depth + 1)}: {self.write(v, depth + 1, True)}" for k, v in value.items()
            )
            self.prelude.append(f"{name} = {{{items}}}")
        else:
            items = ", ".join(self.write(v, depth + 1) for v in value)
            self.prelude.append(f"{name} = {{{items}}}" if value else f"{name} = set()")
        return name

    def _cell(self, cell: types.CellType, depth: int) -> str:
        name = self._remember(cell)
        self.prelude.append(f"{name} = {self.const(new_cell, 'CELL_NEW')}()")
        try:
            contents = cell.cell_contents
        except ValueError:
            return name  # an empty cell (the variable is not assigned yet)
        self.prelude.append(f"{name}.cell_contents = {self.write(contents, depth + 1)}")
        return name

    def _function(self, fn: types.FunctionType, depth: int) -> str:
        if fn.__closure__ and not self.closures:
            raise Unsupported(
                f"closure {fn.__qualname__} (made during the call) is passed to code jitlab.jit cannot follow",
                ReasonKind.UNTRACKED_VALUE,
            )
        name = self._remember(fn)
        closure = (
            "(" + "".join(self.write(c, depth + 1) + ", " for c in fn.__closure__) + ")"
            if fn.__closure__
            else "None"
        )
        defaults = self.write(fn.__defaults__, depth + 1) if fn.__defaults__ else "None"
        kwdefaults = self.write(fn.__kwdefaults__, depth + 1, True) if fn.__kwdefaults__ else "None"
        self.prelude.append(
            f"{name} = {self.const(new_function, 'FUNC_NEW')}({self.const(fn.__code__, 'CODE')}, "
            f"{self.const(fn.__globals__, 'G')}, {fn.__name__!r}, {defaults}, {closure}, {kwdefaults}, "
            f"{fn.__qualname__!r})"
        )
        return name

    def _reduced(self, value: object, depth: int) -> str:
        reduced = value.__reduce__()
        fn, args = reduced[0], reduced[1]
        state = reduced[2] if len(reduced) > 2 else None
        name = self._remember(value)
        args_expr = "(" + "".join(self.write(a, depth + 1, True) + ", " for a in args) + ")"
        state_expr = self.write(state, depth + 1, True)
        self.prelude.append(
            f"{name} = {self.const(rebuild_reduced, 'REDUCE')}({self.const(fn)}, {args_expr}, {state_expr})"
        )
        return name

    def _object(self, value: object, depth: int) -> str:
        name = self._remember(value)
        self.prelude.append(f"{name} = {self.const(new_object, 'NEW')}({self.const(type(value), 'T')})")
        attrs = vars(value)
        if attrs:
            items = ", ".join(f"{k!r}: {self.write(v, depth + 1)}" for k, v in attrs.items())
            self.prelude.append(f"{name}.__dict__.update({{{items}}})")
        return name


def _plain_instance(value: object) -> bool:
    """An instance of an ordinary Python class: attributes in `__dict__`, made by object.__new__."""
    cls = type(value)
    return (
        type(cls) is type
        and cls.__new__ is object.__new__
        and hasattr(value, "__dict__")
        and not hasattr(cls, "__slots__")
        and not isinstance(value, (BaseException, torch.nn.Module))
    )


# ---------------------------------------------------------------------- frames
_FRAME_FIELDS = {f.name: f for f in dataclasses.fields(Frame)}
_RENDERED_FIELDS = {"func", "info", "locals", "globals", "builtins", "stack", "pc"}
# the last exception raised in the frame, kept for its traceback line if a cleanup re-raises it: a
# break is never made while a handler runs (break_site), so a rebuilt frame starts without one
_DROPPED_FIELDS = {"raised_at"}


def render_frames(frames: list[Frame], writer: LiveWriter) -> str:
    """An expression rebuilding `frames` (outermost first) as `(func, pc, locals, stack)` tuples."""
    parts = []
    for frame in frames:
        for name, field in _FRAME_FIELDS.items():
            if name in _RENDERED_FIELDS or name in _DROPPED_FIELDS:
                continue
            default = (
                field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
            )
            if getattr(frame, name) != default:
                # e.g. an exception being handled: no break in the middle of such a construct
                raise Unsupported(
                    f"frame {frame.code.co_qualname} has {name} set", ReasonKind.UNSUPPORTED_CODE
                )
        func = writer.write(frame.func)
        local_items = ", ".join(f"{k!r}: {writer.write(v)}" for k, v in frame.locals.items())
        stack = ", ".join(writer.write(v) for v in frame.stack)
        parts.append(f"({func}, {frame.pc}, {{{local_items}}}, [{stack}])")
    return "(" + "".join(p + ", " for p in parts) + ")"


class _EagerHooks(Hooks):
    """Resumed frames call everything natively, as the original program would run."""

    def step_into(self, func: types.FunctionType) -> bool:
        return False


def resume(frames_state: tuple, point: ResumePoint, value: object, throw: BaseException | None) -> Any:
    """Run the rest of the call from a break, calling everything natively as eager Python would (see
    `jitlab.jit.interpreter.resumption.run_frames`)."""
    return run_frames(frames_state, point, value, throw, _EagerHooks())
