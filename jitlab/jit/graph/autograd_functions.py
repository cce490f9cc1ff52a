"""Custom `torch.autograd.Function`s: one graph node whose backward is the user's.

`MyFn.apply(x, ...)` runs the Function's `forward` from C++ and attaches its `backward` to the
autograd graph. Recording the operations of `forward` into the graph would be wrong for training:
autograd would differentiate them instead of calling the user's `backward` (a straight-through
estimator's gradient is not the derivative of its forward). So the call becomes one node,
`apply_function(MyFn, *args)`, which calls `MyFn.apply` itself when the graph runs:

- with the eager backend the node is `MyFn.apply`: forward and backward are the user's, every call;
- with a compiling backend, AOTAutograd traces through the node with autograd on, so the joint
  graph it compiles contains the user's `backward` as torch ran it (verified for "aot_eager" and
  "inductor" by the tests: gradients equal eager's for Functions whose backward is not the
  derivative of their forward).

During the capture the Function is applied for real (the capture is the call, and its result must
carry the user's backward too), but through a subclass whose `forward` (and `setup_context`) the
interpreter runs: every outside value they read is guarded, while their tensor operations are not
recorded (the node stands for them). With a compiling backend, whose compiled backward is fixed
at compile time, the globals and closure cells that `backward` reads (and the user functions it
calls through them) are guarded as well; with the eager backend `backward` runs natively on every
call and reads them fresh. The class attributes a backward reads (`cls.scale` of a classmethod,
`MyFn.scale` through a global) are guarded too. `forward`, `setup_context` and `backward` may be
staticmethods or classmethods (entmax's Functions), whose first argument is the Function's class.

Not cached: a `forward` that changes outside state (replaying the node would do it again) and one
the interpreter cannot run.
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch
from torch.autograd.function import FunctionMeta

from jitlab.jit.graph.recording_tracer import RecordingTracer
from jitlab.jit.reasons import ReasonKind

#: the function behind the `Function.apply` classmethod (what the interpreter ends up calling)
FUNCTION_APPLY = torch.autograd.Function.apply.__func__  # type: ignore[attr-defined]
_BASE_SETUP_CONTEXT = torch.autograd.Function.setup_context
FunctionClass = type[torch.autograd.Function]  # a custom autograd Function (a class, applied)


def apply_function(cls: FunctionClass, *args: object, **kwargs: object) -> Any:
    """The graph node of a custom autograd Function: `cls.apply(*args, **kwargs)`."""
    return cls.apply(*args, **kwargs)


def is_function_apply(fn: object, args: tuple) -> bool:
    return fn is FUNCTION_APPLY and bool(args) and isinstance(args[0], FunctionMeta)


class CallingInterpreter(Protocol):
    """The interpreter of the capture, as far as this module uses it (the graph stage does not
    import jitlab.jit.interpreter): it runs a user function with guards."""

    def call(self, fn: object, args: tuple, kwargs: dict) -> Any: ...


class FunctionRecorder(Protocol):
    """What applying a custom Function uses of the graph recorder (the capture's, reached through the
    tracer): whether tensor operations run inside an opaque call and what they did there, and
    recording the call as one node; `lazy` (the eager backend) is also what tracing's
    training_calls.py and lookasides.py ask. tests/jit/test_jit_owned_state.py checks that the real
    recorder has every member."""

    lazy: bool
    opaque: int
    opaque_mutation: bool
    opaque_random: bool

    def use(self, value: object) -> None: ...

    def record_opaque_call(
        self, fn: Callable[..., Any], args: tuple, kwargs: dict, out: object, mutates: bool, random: bool
    ) -> None: ...


class FunctionTracer(RecordingTracer, Protocol):
    """The tracer as applying a custom Function sees it (tracing's, a higher stage: never imported
    here): the capture's recorder, effects and interpreter, and the hooks whose reads it guards.
    tests/jit/test_jit_owned_state.py checks that the real tracer has every member."""

    @property
    def recorder(self) -> FunctionRecorder: ...

    @property
    def effects(self) -> Sequence[object]: ...

    @property
    def interpreter(self) -> CallingInterpreter | None: ...

    def step_into(self, func: types.FunctionType) -> bool: ...

    def fresh(self, obj: object) -> Any: ...

    def load_attr(self, obj: object, name: str) -> Any: ...

    def load_global(self, globals_: dict[str, Any], name: str) -> Any: ...

    def load_cell(self, cell: types.CellType, owner_is_fresh: bool) -> Any: ...

    def deep_track(self, value: object, depth: int = 0) -> None: ...


def capture_apply(tracer: FunctionTracer, cls: FunctionClass, args: tuple, kwargs: dict) -> Any:
    """Apply the Function `cls` during a capture and record it as one graph node."""
    recorder = tracer.recorder
    recorder.use((args, kwargs))  # data-dependent numbers handed to the Function are specialised
    runner = _interpreting_subclass(tracer, cls)
    if recorder.opaque:  # a Function applied inside another one's forward: part of that node
        return runner.apply(*args, **kwargs)
    effects_before = len(tracer.effects)
    recorder.opaque += 1
    mutated, random = recorder.opaque_mutation, recorder.opaque_random
    recorder.opaque_mutation = recorder.opaque_random = False
    try:
        out = runner.apply(*args, **kwargs)
    finally:
        recorder.opaque -= 1
        inner_mutation, inner_random = recorder.opaque_mutation, recorder.opaque_random
        recorder.opaque_mutation, recorder.opaque_random = mutated, random
    name = cls.__qualname__
    if len(tracer.effects) != effects_before:
        tracer.problem(
            f"autograd Function {name}.forward changes outside state (it would run twice)",
            ReasonKind.SIDE_EFFECT,
        )
    if not recorder.lazy:
        _guard_backward_reads(tracer, cls)
    recorder.record_opaque_call(apply_function, (cls, *args), kwargs, out, inner_mutation, inner_random)
    tracer.notes.append(f"autograd Function {name}: one graph node, its backward is the user's")
    return out


def _interpreting_subclass(tracer: FunctionTracer, cls: FunctionClass) -> FunctionClass:
    """A subclass of `cls` whose forward/setup_context run under the interpreter (with guards); its
    backward, vjp, jvp and every other attribute are inherited unchanged."""
    interp = tracer.interpreter
    forward = cls.forward
    forward_fn, forward_first = _function_of(forward, cls)
    user_forward = forward_fn is not None and tracer.step_into(forward_fn)
    setup = cls.setup_context
    has_setup = setup != _BASE_SETUP_CONTEXT
    setup_fn, setup_first = _function_of(setup, cls)
    attrs: dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
    if user_forward:

        @functools.wraps(forward)  # the same signature: apply() binds defaults with it
        def interpreted_forward(*fargs: object, **fkwargs: object) -> Any:
            if not has_setup and fargs:
                tracer.fresh(fargs[0])  # ctx: created by torch for this call, written freely
            return interp.call(forward_fn, (*forward_first, *fargs), fkwargs)

        attrs["forward"] = staticmethod(interpreted_forward)
    if has_setup and setup_fn is not None and tracer.step_into(setup_fn):

        def interpreted_setup(ctx: object, inputs: tuple, output: object) -> Any:
            tracer.fresh(ctx)
            return interp.call(setup_fn, (*setup_first, ctx, inputs, output), {})

        attrs["setup_context"] = staticmethod(interpreted_setup)
    return type(cls)(cls.__name__, (cls,), attrs)


def _function_of(method: object, cls: FunctionClass) -> tuple[types.FunctionType | None, tuple]:
    """The Python function behind a Function's `forward`, `setup_context` or `backward` as read from
    its class, and the arguments it takes before torch's: none for a staticmethod, the class for a
    classmethod (entmax's `Entmax15Function` defines them so), which eager code binds to `cls`
    itself. (None, ()) for anything else."""
    if type(method) is types.FunctionType:
        return method, ()
    if (
        type(method) is types.MethodType
        and isinstance(method.__self__, type)
        and issubclass(cls, method.__self__)
    ):
        function = method.__func__
        if type(function) is types.FunctionType:
            return function, (method.__self__,)
    return None, ()


def _guard_backward_reads(tracer: FunctionTracer, cls: FunctionClass) -> None:
    """Guard the globals and closure cells the user's backward reads (and the user functions it
    reaches through them), for backends that compile the backward once."""
    seen: set[types.CodeType] = set()
    pending = [getattr(cls, n, None) for n in ("backward", "vjp", "jvp")]
    while pending:
        fn = pending.pop()
        fn = getattr(fn, "__wrapped__", fn)  # once_differentiable
        classes = []
        if type(fn) is types.MethodType and isinstance(fn.__self__, type):  # a classmethod: `cls`
            classes.append(fn.__self__)
            fn = fn.__func__
        if type(fn) is not types.FunctionType or fn.__code__ in seen or not tracer.step_into(fn):
            continue
        seen.add(fn.__code__)
        for value in _reads_of(tracer, fn):
            if type(value) is types.FunctionType:
                pending.append(value)
            elif isinstance(value, FunctionMeta):
                pending.extend(getattr(value, n, None) for n in ("forward", "backward"))
            if isinstance(value, type):
                classes.append(value)
        _guard_class_attributes(tracer, fn, classes)


def _guard_class_attributes(tracer: FunctionTracer, fn: types.FunctionType, classes: list[type]) -> None:
    """Guard the attributes `fn` may read from `classes` (its `cls`, the classes it reads as
    globals): each name `fn` loads as an attribute that the class has (`cls.scale`,
    `MyFn.scale`), as the capture guards an attribute read. A compiled backward keeps what it read."""
    names = {
        instr.argval
        for instr in dis.get_instructions(fn.__code__)
        if instr.opname in ("LOAD_ATTR", "LOAD_METHOD") and type(instr.argval) is str
    }
    for klass in classes:
        for name in sorted(names):
            if hasattr(klass, name):
                tracer.load_attr(klass, name)


def _reads_of(tracer: FunctionTracer, fn: types.FunctionType) -> list[Any]:
    """Track (guard) each global and free variable `fn` loads; returns their values."""
    code = fn.__code__
    values = []
    for instr in dis.get_instructions(code):
        if instr.opname == "LOAD_GLOBAL":
            name = instr.argval
            try:
                values.append(tracer.load_global(fn.__globals__, name))
            except NameError:
                continue  # only a name that is never set; running backward would raise as eager does
    for cell in fn.__closure__ or ():
        try:
            values.append(tracer.load_cell(cell, False))
        except ValueError:
            continue  # an empty cell
    for value in values:
        tracer.deep_track(value)  # a config object or table read by backward: its content too
    return values
