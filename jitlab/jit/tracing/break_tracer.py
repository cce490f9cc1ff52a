"""The tracer with graph breaks: `BreakTracer` turns calls the interpreter cannot follow into call
breaks (see jitlab.jit.breaks.book), lets Python compare a number still kept in the graph without
fixing its value (break_recorder.py), and guards a break's result.
"""

from __future__ import annotations

import builtins
import functools
import logging
import operator
import types
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.breaks.book import NO_BREAK, BreakBook, CaptureView, plain_object_like
from jitlab.jit.graph.data_values import Speculation
from jitlab.jit.graph.training_nodes import is_backward, runs_backward_hooks
from jitlab.jit.guards.builder import SCALAR_TYPES
from jitlab.jit.guards.sources import AttrSource, ItemSource, Source
from jitlab.jit.interpreter.frame import deciding_assert
from jitlab.jit.interpreter.hooks import is_user_code
from jitlab.jit.interpreter.sites import NATIVE_CALL_INNER, NATIVE_CALL_OUTER, TRUTH, resumable
from jitlab.jit.reasons import Reason, ReasonKind
from jitlab.jit.tracing.break_recorder import COMPARISONS
from jitlab.jit.tracing.logging_effects import LoggingEffects, once_logging_call
from jitlab.jit.tracing.lookasides import NOT_HANDLED
from jitlab.jit.tracing.trace_rules import code_module
from jitlab.jit.tracing.tracer import Tracer
from jitlab.jit.tracing.warning_effects import WarningEffects


def _user_callable(value: object) -> bool:
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
_FUNCTION_APPLY = torch.autograd.Function.__dict__["apply"].__func__  # what `MyFunction.apply` unwraps to
_TORCH_FUNCTION_PROBES = {
    torch._C._has_torch_function, torch._C._has_torch_function_unary, torch._C._has_torch_function_variadic,
}  # fmt: skip


def _break_reason(kind: ReasonKind, message: str) -> Reason:
    """The reason of a call break, with its kind (decided by the place that asks for the break)."""
    return Reason(kind, message, what="graph break")


class BreakTracer(Tracer):
    """The tracer, turning calls it cannot follow into call breaks (see BreakBook.call_break)."""

    def __init__(self, capture: CaptureView) -> None:
        super().__init__(capture)
        self.in_break = 0
        self.warning_effects = WarningEffects(self)  # `warnings.warn` replayed as an effect
        self.logging_effects = LoggingEffects(self)  # once-only logging replayed as an effect
        # a call about to run natively that should be a break: (fn, the break's reason, the problems
        # set aside for it, noted again if no break can be made there)
        self._pending: tuple[Any, Reason, list[Reason]] | None = None
        # what the interpreter is doing right now, innermost last: a native call (fn, args) or a
        # truth test (value); a data break must come from exactly that (see made_directly)
        self._doing: list[tuple[str, Any, tuple]] = []
        self.deciding = False  # a comparison of a value kept in the graph is being recorded

    @property
    def book(self) -> BreakBook | None:
        """The capture's break book."""
        return self.capture.book

    def made_directly(self, spec: Speculation) -> bool:
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
        what = (
            "a class statement" if func is builtins.__build_class__ else f"user function {func.__qualname__}"
        )
        message = f"{what} cannot be interpreted ({reason})"
        self._pending = (func, _break_reason(ReasonKind.UNSUPPORTED_CODE, message), [])

    def intercept_call(self, fn: object, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
        count = len(self.problems)
        out = super().intercept_call(fn, args, kwargs)
        if out is None and isinstance(fn, nn.Module) and len(self.problems) > count:
            found = self.problems[count:]
            del self.problems[count:]
            message = f"{'; '.join(p.message for p in found)}: the module is called natively"
            self._pending = (fn, _break_reason(ReasonKind.NATIVE_CALL, message), found)
        return out

    @resumable(NATIVE_CALL_OUTER)
    def call_native(self, fn: object, args: tuple, kwargs: dict) -> Any:
        self._doing.append(("call", fn, args))
        try:
            return self._call_native_or_break(fn, args, kwargs)
        finally:
            self._doing.pop()

    @resumable(NATIVE_CALL_INNER)
    def _call_native_or_break(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        recorder = self.recorder
        if fn is warnings.warn and not self.in_break:
            shown = self.warning_effects.replayed_warning(args, kwargs)
            if shown is not NOT_HANDLED:
                return shown
        if not self.in_break and once_logging_call(fn):
            logged = self.logging_effects.replayed_once_log(fn, args, kwargs)
            if logged is not NOT_HANDLED:
                return logged
        if fn in _TORCH_FUNCTION_PROBES:
            # library code asks whether a tensor overrides torch functions (to pick a fast path, as
            # TransformerEncoderLayer does): answer as eager code would, without the recorder's mode
            with torch.overrides._pop_mode_temporarily():
                return fn(*args, **kwargs)
        if recorder.lazy_floats and fn in COMPARISONS and not kwargs and len(args) == 2:
            decided = recorder.lazy_decision(fn, args)
            if decided is not None:
                return decided
        if recorder.has_symbols() and type(fn) is types.BuiltinMethodType:
            owner = fn.__self__
            if isinstance(owner, torch.Tensor) and fn.__name__ in ("size", "numel", "stride") and not kwargs:
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
            if result is not NO_BREAK:
                return result
            if pending is not None and pending[0] is fn:
                self._restore(pending)
        return super().call_native(fn, args, kwargs)

    def _restore(self, pending: tuple[Any, Reason, list[Reason]]) -> None:
        fn, reason, problems = pending
        if problems:
            for problem in problems:
                self.add_problem(problem)
        else:
            Tracer.native_user_code(self, fn, reason.message)

    def _callback_reason(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Reason | None:
        """Why this native call may run user code (so it must be a break), or None."""
        if fn is warnings.warn or fn is warnings.warn_explicit:
            return _break_reason(
                ReasonKind.GLOBAL_STATE,
                f"warnings.{fn.__name__}: the warning filters decide on every call whether it shows",
            )
        t = type(fn)
        if t is types.BuiltinFunctionType or t is types.BuiltinMethodType:
            owner = getattr(fn, "__self__", None)
            if owner is builtins:
                if fn.__name__ in _KEY_BUILTINS and _user_callable(kwargs.get("key")):
                    return _break_reason(
                        ReasonKind.LIBRARY_CALLBACK,
                        f"{fn.__name__}() calls the user function {kwargs['key'].__qualname__} back",
                    )
                return None
            root = (getattr(fn, "__module__", None) or type(owner).__module__ or "").split(".", 1)[0]
            if root != "torch" and not isinstance(owner, torch.Tensor) and _callback_args(args, kwargs):
                return _break_reason(
                    ReasonKind.LIBRARY_CALLBACK, f"library function {fn.__qualname__} calls user code back"
                )
            return None
        if t is types.MethodType:
            owner = fn.__self__
            if isinstance(owner, logging.Logger):  # `logger.warning_once(...)`: an lru_cache'd method
                return _break_reason(
                    ReasonKind.GLOBAL_STATE,
                    f"logging's {fn.__name__} reads the logging configuration and calls its handlers",
                )
            if (
                isinstance(owner, type)
                and issubclass(owner, torch.autograd.Function)
                and fn.__name__ == "apply"
            ):
                return _break_reason(
                    ReasonKind.NATIVE_CALL, f"autograd Function {owner.__qualname__} is applied natively"
                )
            return None
        if isinstance(fn, nn.Module):
            name = getattr(fn, "original_name", None) or type(fn).__name__  # a script module's own class
            return _break_reason(ReasonKind.NATIVE_CALL, f"module {name} is called natively")
        if fn is _FUNCTION_APPLY and args and isinstance(args[0], type):
            return _break_reason(
                ReasonKind.NATIVE_CALL, f"autograd Function {args[0].__qualname__} is applied natively"
            )
        if t is types.FunctionType and is_backward(fn) and runs_backward_hooks(args, kwargs):
            return _break_reason(
                ReasonKind.NATIVE_CALL, "the backward pass runs backward hooks (user code): it runs natively"
            )
        if t is types.FunctionType and args and isinstance(args[0], torch.optim.lr_scheduler.LRScheduler):
            return _break_reason(  # the interpreter hands `sched.step()` over as `step(sched)`
                ReasonKind.NATIVE_CALL,
                f"learning-rate scheduler {type(args[0]).__name__}.{fn.__name__} runs natively (it decides "
                "in Python on its step count, which changes on every call)",
            )
        if t is types.FunctionType or isinstance(fn, functools.partial):
            if getattr(fn, "_torchdynamo_disable", False) is True:  # what torch.compiler.disable makes
                marked = getattr(fn, "_torchdynamo_orig_callable", fn)
                name = getattr(marked, "__qualname__", None) or type(marked).__name__
                return _break_reason(
                    ReasonKind.MARKED_NATIVE, f"{name} is marked torch.compiler.disable: it runs eagerly"
                )
            if t is types.FunctionType and code_module(fn).split(".", 1)[0] == "logging":
                return _break_reason(
                    ReasonKind.GLOBAL_STATE,
                    f"logging's {fn.__qualname__} reads the logging configuration and calls its handlers",
                )
            if _callback_args(args, kwargs):
                name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", type(fn).__name__)
                return _break_reason(
                    ReasonKind.LIBRARY_CALLBACK, f"library function {name} calls user code back"
                )
            return None
        if t is type and type(fn) is type and fn.__module__ not in ("builtins",):
            init = fn.__dict__.get("__init__") or getattr(fn, "__init__", None)
            if type(init) is types.FunctionType and is_user_code(init.__code__):
                return _break_reason(
                    ReasonKind.NATIVE_CALL, f"class {fn.__qualname__} is constructed natively"
                )
        return None

    @resumable(TRUTH)
    def truth(self, value: object) -> bool:
        if self.recorder.lazy_floats and self.recorder.lazy_entry(value) is not None:
            decided = self.recorder.lazy_decision(operator.truth, (value,))
            if decided is not None:
                return decided
        self._doing.append(("truth", value, ()))
        recorder, outer = self.recorder, self.recorder.raising_check
        if type(value) in (torch.Tensor, nn.Parameter) and self._deciding_assert():
            # `assert (t < m).all()`: the entry checks the value, a failing check raises AssertionError
            # when the call is captured again; it is no specialisation (see data_values.Speculation.raises)
            recorder.raising_check = "an assert, which raises AssertionError otherwise"
        try:
            return super().truth(value)
        finally:
            recorder.raising_check = outer
            self._doing.pop()

    def _deciding_assert(self) -> bool:
        frames = getattr(self.interpreter, "frames", None)
        return bool(frames) and deciding_assert(frames[-1])

    def profile(self, frame: types.FrameType, event: str, arg: object) -> None:
        if not self.in_break:
            super().profile(frame, event, arg)

    def track(self, value: object, source: Source) -> Any:
        recorder = self.recorder
        recorder.paused += 1  # as recorder.pause(): reading metadata for guards is no read by the program
        try:  # (inlined: a capture of a large model tracks tens of thousands of values)
            return self._track_keeping_var(value, source)
        finally:
            recorder.paused -= 1

    def _track_keeping_var(self, value: object, source: Source) -> Any:
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

    def track_result(self, value: object, source: Source) -> Any:
        """A break's result: guarded like an argument, but a plain object by its type (a function
        run natively usually returns a new one on each call)."""
        if isinstance(value, BaseException):
            return self._track_raised(value, source)
        if (
            type(value) not in SCALAR_TYPES
            and not isinstance(value, (torch.Tensor, nn.Module, type))
            and plain_object_like(value)
        ):
            self.adopt(value, source)
            self.builder.type_match(source, value)
            if self.book is not None:
                self.book.var_at_read[id(value)] = (value, self.builder.var(source))
            return value
        return self.track(value, source)

    def _track_raised(self, exc: BaseException, source: Source) -> BaseException:
        """The exception a break's call raised (the program catches it): a new object on every call,
        guarded by its type and its arguments, which its message is made of (`str(exc)` reads them
        natively). Arguments other than scalars (numbers, strings, bytes) cannot be guarded: no entry."""
        args = exc.args
        if type(args) is not tuple or not all(type(a) in SCALAR_TYPES for a in args):
            self.problem(
                f"a graph break raised {type(exc).__name__} with arguments jitlab.jit cannot guard",
                ReasonKind.USER_EXCEPTION,
            )
            return exc
        self.adopt(exc, source)
        self.builder.type_match(source, exc)
        held = AttrSource(source, "args")
        self.builder.expr(held, "len({v})", len(args))
        for i, arg in enumerate(args):
            self.builder.equals_match(ItemSource(held, i), arg)
        if self.book is not None:
            self.book.var_at_read[id(exc)] = (exc, self.builder.var(source))
        return exc
