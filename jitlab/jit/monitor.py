"""The capture's monitor with graph breaks: the tracer and the graph recorder, extended.

`BreakTracer` turns calls the interpreter cannot follow into call breaks (see breaks.py), lets Python
compare a number still kept in the graph without fixing its value, and guards a break's result.
`BreakRecorder` notes where each speculation is made (a possible data break), which nodes have
effects, and (with symbolic sizes, see shapes.py) keeps sizes read by Python as graph values.
"""

from __future__ import annotations

import builtins
import functools
import operator
import types
from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn

from jitlab.jit.breaks import _NO_BREAK, BreakBook, plain_object_like
from jitlab.jit.graph import DataInt, GraphRecorder, Speculation
from jitlab.jit.guards import SCALAR_TYPES, GuardBuilder
from jitlab.jit.interpreter.hooks import is_user_code
from jitlab.jit.shapes import VARIABLE_ARITY, SymbolicSizes
from jitlab.jit.sources import Source
from jitlab.jit.tracer import Tracer


def _user_callable(value: Any) -> bool:
    """User code that library code would call back: a user function or method, a user module."""
    if isinstance(value, functools.partial):
        return _user_callable(value.func)
    if type(value) is types.FunctionType:
        return is_user_code(value.__code__)
    if type(value) is types.MethodType:
        return _user_callable(value.__func__)
    if isinstance(value, nn.Module):  # a container (nn.Sequential of user modules) counts too
        if "_modules" not in value.__dict__:
            # a module whose nn.Module.__init__ has not run yet, passed to it: e.g. to the patched
            # `Module.__init__` TorchDynamo installs once torch.compile has run in the process. It has
            # no submodules or hooks yet; only its class's forward can be user code
            forward = getattr(type(value), "forward", None)
            return type(forward) is types.FunctionType and is_user_code(forward.__code__)
        for n, module in enumerate(value.modules()):
            forward = getattr(type(module), "forward", None)
            if module._forward_hooks or module._forward_pre_hooks or n > 256:
                return True
            if type(forward) is types.FunctionType and is_user_code(forward.__code__):
                return True
    return False


def _callback_args(args: tuple, kwargs: dict) -> bool:
    for value in (*args, *kwargs.values()):
        if _user_callable(value):
            return True
        if type(value) in (list, tuple) and len(value) <= 64 and any(_user_callable(v) for v in value):
            return True
    return False


_KEY_BUILTINS = {"sorted", "min", "max"}
_COMPARISONS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.eq: "==",
                operator.ne: "!="}  # fmt: skip
_NUMBERS = (int, float, bool, DataInt)
_FUNCTION_APPLY = torch.autograd.Function.__dict__["apply"].__func__  # what `MyFunction.apply` unwraps to
_TORCH_FUNCTION_PROBES = {
    torch._C._has_torch_function, torch._C._has_torch_function_unary, torch._C._has_torch_function_variadic,
}  # fmt: skip


class BreakTracer(Tracer):
    """The tracer, turning calls it cannot follow into call breaks (see BreakBook.call_break)."""

    def __init__(self, builder: GuardBuilder) -> None:
        super().__init__(builder)
        self.book: BreakBook | None = None
        self.in_break = 0
        self._pending: tuple[Any, str, list[str]] | None = None
        # what the interpreter is doing right now, innermost last: a native call (fn, args) or a
        # truth test (value); a data break must come from exactly that (see made_directly)
        self._doing: list[tuple[str, Any, tuple]] = []
        self.deciding = False  # a comparison of a value kept in the graph is being recorded

    def made_directly(self, spec: Any) -> bool:
        """Whether a speculation is the value the current call or truth test produces itself (not one
        made deeper, e.g. by a C function calling `Tensor.__bool__`): only then can the program be
        resumed with it."""
        if self.deciding:
            return True
        if not self._doing or len(spec.nodes) != 1:
            return False
        what, fn, args = self._doing[-1]
        name = spec.text.split("(", 1)[0]
        node = spec.nodes[0]
        known = self.recorder.node_of.get(id(fn if what == "truth" else getattr(fn, "__self__", None)))
        if what == "truth":
            return name == "__bool__" and known is not None and known[1] is node
        if type(fn) is types.BuiltinMethodType and isinstance(fn.__self__, torch.Tensor):
            return fn.__name__ == name and known is not None and known[1] is node and not args
        conversions = {int: "__int__", float: "__float__", bool: "__bool__", operator.index: "__index__"}
        if fn in conversions and len(args) == 1 and isinstance(args[0], torch.Tensor):
            held = self.recorder.node_of.get(id(args[0]))
            return conversions[fn] == name and held is not None and held[1] is node
        return False

    def native_user_code(self, func: types.FunctionType, reason: str) -> None:
        self._pending = (func, f"user function {func.__qualname__} cannot be interpreted ({reason})", [])

    def intercept_call(self, fn: Any, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
        count = len(self.problems)
        out = super().intercept_call(fn, args, kwargs)
        if out is None and isinstance(fn, nn.Module) and len(self.problems) > count:
            found = self.problems[count:]
            del self.problems[count:]
            self._pending = (fn, f"{'; '.join(found)}: the module is called natively", found)
        return out

    def call_native(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        self._doing.append(("call", fn, args))
        try:
            return self._call_native_or_break(fn, args, kwargs)
        finally:
            self._doing.pop()

    def _call_native_or_break(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        recorder = self.recorder
        if fn in _TORCH_FUNCTION_PROBES:
            # library code asks whether a tensor overrides torch functions (to pick a fast path, as
            # TransformerEncoderLayer does): answer as eager code would, without the recorder's mode
            with torch.overrides._pop_mode_temporarily():
                return fn(*args, **kwargs)
        if recorder._lazy_floats and fn in _COMPARISONS and not kwargs and len(args) == 2:
            decided = recorder.lazy_decision(fn, args)
            if decided is not None:
                return decided
        if recorder.symbolic and type(fn) is types.BuiltinMethodType:
            owner = fn.__self__
            if isinstance(owner, torch.Tensor) and fn.__name__ in ("size", "numel") and not kwargs:
                size = recorder.symbolic_shape(owner, fn.__name__, args)
                if size is not None:
                    return size
            elif type(owner) is torch.Size:
                recorder.use(owner)  # `x.shape.numel()`: the sizes are read by native code
        pending, reason = self._pending, None
        if pending is not None:
            self._pending = None
            if pending[0] is fn:
                reason = pending[1]
            else:  # pragma: no cover - the interpreter calls right after deciding; keep the problem
                self._restore(pending)
        if reason is None and self.lookasides.find(fn, args, kwargs) is None:
            reason = self._callback_reason(fn, args, kwargs)  # user code no lookaside interprets
        if reason is not None and self.book is not None and not self.in_break:
            result = self.book.call_break(fn, args, kwargs, reason)
            if result is not _NO_BREAK:
                return result
            if pending is not None and pending[0] is fn:
                self._restore(pending)
        return super().call_native(fn, args, kwargs)

    def _restore(self, pending: tuple[Any, str, list[str]]) -> None:
        fn, reason, problems = pending
        if problems:
            for problem in problems:
                self.problem(problem)
        else:
            Tracer.native_user_code(self, fn, reason)

    def _callback_reason(self, fn: Any, args: tuple, kwargs: dict) -> str | None:
        """Why this native call may run user code (so it must be a break), or None."""
        t = type(fn)
        if t is types.BuiltinFunctionType or t is types.BuiltinMethodType:
            owner = getattr(fn, "__self__", None)
            if owner is builtins:
                if fn.__name__ in _KEY_BUILTINS and _user_callable(kwargs.get("key")):
                    return f"{fn.__name__}() calls the user function {kwargs['key'].__qualname__} back"
                return None
            root = (getattr(fn, "__module__", None) or type(owner).__module__ or "").split(".", 1)[0]
            if root != "torch" and not isinstance(owner, torch.Tensor) and _callback_args(args, kwargs):
                return f"library function {fn.__qualname__} calls user code back"
            return None
        if t is types.MethodType:
            owner = fn.__self__
            if (
                isinstance(owner, type)
                and issubclass(owner, torch.autograd.Function)
                and fn.__name__ == "apply"
            ):
                return f"autograd Function {owner.__qualname__} is applied natively"
            return None
        if isinstance(fn, nn.Module):
            return f"module {type(fn).__name__} is called natively"
        if fn is _FUNCTION_APPLY and args and isinstance(args[0], type):
            return f"autograd Function {args[0].__qualname__} is applied natively"
        if t is types.FunctionType or isinstance(fn, functools.partial):
            if _callback_args(args, kwargs):
                name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", type(fn).__name__)
                return f"library function {name} calls user code back"
            return None
        if t is type and type(fn) is type and fn.__module__ not in ("builtins",):
            init = fn.__dict__.get("__init__") or getattr(fn, "__init__", None)
            if type(init) is types.FunctionType and is_user_code(init.__code__):
                return f"class {fn.__qualname__} is constructed natively"
        return None

    def truth(self, value: Any) -> bool:
        if self.recorder._lazy_floats and self.recorder.lazy_entry(value) is not None:
            decided = self.recorder.lazy_decision(operator.truth, (value,))
            if decided is not None:
                return decided
        self._doing.append(("truth", value, ()))
        try:
            return super().truth(value)
        finally:
            self._doing.pop()

    def profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if not self.in_break:
            super().profile(frame, event, arg)

    def track(self, value: Any, source: Source) -> Any:
        with self.recorder.pause():  # reading metadata for guards is no read by the program
            return self._track_keeping_var(value, source)

    def _track_keeping_var(self, value: Any, source: Source) -> Any:
        node = None
        if isinstance(value, torch.Tensor):
            known = self.recorder.node_of.get(id(value))
            if known is not None and known[0] is value and known[1].op == "placeholder":
                node = known[1]
        var = node.meta.get("jit_var") if node is not None else None
        out = super().track(value, source)
        if node is not None and var is not None:
            node.meta["jit_var"] = var  # a placeholder keeps the variable it was first read into
        elif (
            self.book is not None and type(value) not in SCALAR_TYPES and not isinstance(value, torch.Tensor)
        ):
            self.book.var_at_read[id(value)] = (value, self.builder.var(source))
        return out

    def track_result(self, value: Any, source: Source) -> Any:
        """A break's result: guarded like an argument, but a plain object by its type (a function
        run natively usually returns a new one on each call)."""
        if (
            type(value) not in SCALAR_TYPES
            and not isinstance(value, (torch.Tensor, nn.Module, type))
            and (plain_object_like(value))
        ):
            self.adopt(value, source)
            self.builder.type_match(source, value)
            if self.book is not None:
                self.book.var_at_read[id(value)] = (value, self.builder.var(source))
            return value
        return self.track(value, source)


def _same(value: Any) -> Any:
    return value


class BreakRecorder(SymbolicSizes, GraphRecorder):
    """The graph recorder, noting where speculations are made, which nodes have effects, which
    segment created each placeholder, and (SymbolicSizes) the sizes Python reads."""

    def __init__(self, tracer: Any) -> None:
        super().__init__(tracer)
        self.book: BreakBook | None = None
        self.segment = 0
        self.fixed_arity = False
        self.init_sizes(None)

    def note_segment(self, segment: int) -> None:
        self.segment = segment

    def add_input(self, tensor: torch.Tensor, label: str) -> fx.Node:
        known = self.node_of.get(id(tensor))
        node = super().add_input(tensor, label)
        if known is None:
            node.meta["jit_segment"] = self.segment
            self.note_input(node, tensor, label)
        return node

    def lazy_shape(self, tensor: Any, name: str, args: tuple) -> Any:
        size = self.symbolic_shape(tensor, name, args)
        return size if size is not None else super().lazy_shape(tensor, name, args)

    def _activate(self, lazy: tuple) -> None:
        if not self.fix_size(lazy):
            super()._activate(lazy)

    def _activate_roots(self, roots: frozenset[Any]) -> None:
        if self.fixed_arity:
            roots = frozenset(r for r in roots if not (type(r) is tuple and self.size_derived(r)))
        super()._activate_roots(roots)

    def lazy_decision(self, fn: Any, args: tuple) -> bool | None:
        """Python compares (or tests) a number still kept in the graph: the graph computes the
        comparison and the entry re-checks its outcome, not the number itself, so one entry serves
        every value on the same side (`if loss.item() > 1.0`). For sizes the outcome is a fact,
        checked by the guards before the graph runs (`if x.shape[0] > 1`)."""
        if not all(type(a) in _NUMBERS for a in args):
            return None
        if not any(self.lazy_entry(a) is not None for a in args):
            return None
        decided = self.size_decision(fn, args, tuple(self._arg(a) for a in args)) if self.symbolic else None
        if decided is not None or not self.lazy:
            return decided
        result = fn(*args)
        if type(result) is not bool:
            return None
        names = [self._origin(a) for a in args]
        node = self.graph.call_function(fn, tuple(self._arg(a) for a in args))
        if fn is operator.truth:
            text = f"bool({names[0]}) is {result}"
        else:
            text = f"{names[0]} {_COMPARISONS[fn]} {names[1]} is {result}"
        self.tracer.deciding = True
        try:
            self._add_spec(Speculation(_same, [node], result, text, truth=node), active=True)
        finally:
            self.tracer.deciding = False
        return result

    def _origin(self, value: Any, depth: int = 0) -> str:
        """How a number kept in the graph was read from tensor data, for the explanation."""
        entry = self.lazy_entry(value)
        if entry is None:
            return repr(value)
        index, parents = entry[2], entry[3]
        if type(index) is int and index >= 0:
            return self._specs[index].text.split(" == ")[0]
        if index == -1:
            return "a draw from Python's random"
        if isinstance(index, frozenset):
            return "a size of a data-dependent shape"
        if parents and depth < 4:
            return f"(arithmetic on {self._origin(parents[0][0], depth + 1)})"
        return repr(value)

    def _add_spec(self, spec: Any, active: bool) -> int:
        index = super()._add_spec(spec, active)
        if self.book is not None:
            try:
                self.book.data_site(spec)
            except Exception as exc:  # a bug here must cost the break, never the user's call
                self.tracer.problem(
                    f"internal error noting a data-dependent value: {type(exc).__name__}: {exc}"
                )
        return index

    def _record(self, func, getter, name, args, kwargs, out) -> None:
        last = next(reversed(self.graph.nodes), None)
        mutation, random = self.has_mutation, self.has_random
        self.has_mutation = self.has_random = False
        # an operation returning a tuple whose length cannot depend on sizes keeps them symbolic
        self.fixed_arity = (
            bool(self.symbolic) and isinstance(out, (tuple, list)) and name not in VARIABLE_ARITY
        )
        try:
            super()._record(func, getter, name, args, kwargs, out)
        finally:
            self.fixed_arity = False
            effect = self.has_mutation or self.has_random
            self.has_mutation, self.has_random = mutation or self.has_mutation, random or self.has_random
            if effect:
                for node in reversed(self.graph.nodes):
                    if node is last or node.op == "placeholder":
                        break
                    node.meta["jit_effect"] = True

    def add_draw(self, fn: Any, args: tuple, kwargs: dict, value: float) -> None:
        super().add_draw(fn, args, kwargs, value)
        next(reversed(self.graph.nodes)).meta["jit_effect"] = True
