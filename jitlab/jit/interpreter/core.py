"""The interpreter loop: calls, frames, exception unwinding and interpreted generators.

`Interpreter.call(fn, args, kwargs)` is the entry point for every call made by interpreted code.
Python functions that the hooks accept (user code, `forward` methods) and whose bytecode uses only
opcodes the running Python's handler table covers get a `Frame` run by `run_frame`; everything else
is called natively through `hooks.call_native`. Exceptions raised by handlers or native calls unwind
through the frame's exception table exactly as CPython 3.11, 3.12 and 3.13 do (the tables have one
format; what the handlers they lead to do is each version's bytecode). Generator functions return an
`InterpretedGenerator` (generators.py).
"""

from __future__ import annotations

import abc
import dis
import functools
import inspect
import types
from typing import Any

from jitlab.jit.interpreter.frame import Frame, code_info, instruction_line
from jitlab.jit.interpreter.generators import InterpretedGenerator
from jitlab.jit.interpreter.hooks import Hooks
from jitlab.jit.interpreter.ops_classes import BUILD_CLASS, build_class, natively_because

CO_VARARGS = inspect.CO_VARARGS
CO_VARKEYWORDS = inspect.CO_VARKEYWORDS
CO_GENERATOR = inspect.CO_GENERATOR
_UNINTERPRETABLE_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE

_SUPPORT: dict[types.CodeType, str | None] = {}


def unsupported_reason(code: types.CodeType) -> str | None:
    """Why `code` cannot be interpreted (an opcode without handler, async code), or None."""
    if code in _SUPPORT:
        return _SUPPORT[code]
    reason = None
    if code.co_flags & _UNINTERPRETABLE_FLAGS:
        reason = f"{code.co_qualname}: coroutines and async generators are not supported"
    else:
        why = code_info(code).unsupported
        if why is not None:
            reason = f"{code.co_qualname}: {why}"
    _SUPPORT[code] = reason
    return reason


class Interpreter:
    """A concrete interpreter of CPython 3.11, 3.12 and 3.13 bytecode (that of the running Python)."""

    max_depth = 60  # interpreted frames; deeper calls run natively (each level costs ~6 Python frames)

    def __init__(self, hooks: Hooks | None = None) -> None:
        self.hooks = hooks or Hooks()
        self.depth = 0
        # The exception being handled, as CPython keeps it: one slot per running generator and one for
        # everything else (`exc_info` is the current slot, `outer_exc_info` the slots below it).
        self.exc_info: BaseException | None = None
        self.outer_exc_info: list[BaseException | None] = []
        self.frames: list[Frame] = []  # frames being run, outermost first (read by graph breaks)

    def handled_exception(self) -> BaseException | None:
        """What sys.exception() would say in interpreted code: the innermost slot that is set."""
        if self.exc_info is not None:
            return self.exc_info
        for exc in reversed(self.outer_exc_info):
            if exc is not None:
                return exc
        return None

    def chain(self, exc: BaseException) -> None:
        """Implicit exception chaining, as CPython does when an exception is raised: its __context__
        becomes the exception being handled (cutting a cycle through `exc` if there is one)."""
        handled = self.handled_exception()
        if handled is None or handled is exc:
            return
        seen = set()
        o = handled
        while id(o) not in seen:
            seen.add(id(o))
            context = o.__context__
            if context is None:
                break
            if context is exc:
                o.__context__ = None
                break
            o = context
        exc.__context__ = handled

    # ----------------------------------------------------------------- calls
    def _unwrap_partial(self, fn: functools.partial, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict]:
        """The call a `functools.partial` makes: its function, its arguments before `args` and its
        keywords under `kwargs`, each read through the hooks as the program's own reads are (an
        outside partial's `args` items and `keywords` are guarded: `partial(scale, config)` with
        `config.scale` changed between calls, or `partial(F.gelu, approximate="tanh")` with its
        keywords changed)."""
        hooks = self.hooks
        bound = tuple(hooks.get_iter(hooks.load_attr(fn, "args")))
        given = hooks.load_attr(fn, "keywords")
        keywords = {key: hooks.load_item(given, key) for key in hooks.get_iter(given)}
        return hooks.load_attr(fn, "func"), (*bound, *args), {**keywords, **kwargs}

    def call(self, fn: object, args: tuple, kwargs: dict) -> Any:
        """Call `fn(*args, **kwargs)`, interpreting it when possible."""
        for _ in range(8):  # unwrap layers: bound methods, partials, modules, classes
            replaced = self.hooks.intercept_call(fn, args, kwargs)
            if replaced is not None:
                fn, args, kwargs = replaced
                continue
            if type(fn) is types.MethodType and type(fn.__func__) is types.FunctionType:
                fn, args = fn.__func__, (self.hooks.bound_self(fn), *args)
                continue
            if type(fn) is functools.partial:
                fn, args, kwargs = self._unwrap_partial(fn, args, kwargs)
                continue
            break
        if fn is BUILD_CLASS:  # a class statement (ops_classes.py)
            reason = natively_because(args, kwargs)
            if reason is None:
                return build_class(self, args, kwargs)
            self.hooks.native_user_code(fn, reason)  # type: ignore[arg-type]
        elif type(fn) is types.FunctionType and self.hooks.step_into(fn):
            reason = unsupported_reason(fn.__code__)
            if reason is None and self.depth >= self.max_depth:
                reason = f"{fn.__qualname__}: calls nested deeper than {self.max_depth} levels"
            if reason is None:
                return self.call_function(fn, args, kwargs)
            self.hooks.native_user_code(fn, reason)  # type: ignore[attr-defined]
        elif isinstance(fn, type) and self._is_plain_class(fn, args, kwargs):
            return self._instantiate(fn, args, kwargs)
        elif isinstance(fn, type) and self._has_python_new(fn):
            return self._instantiate_with_new(fn, args, kwargs)
        return self.hooks.call_native(fn, args, kwargs)

    def _is_plain_class(self, cls: type, args: tuple, kwargs: dict) -> bool:
        """Whether the interpreter builds an instance of `cls` itself: `object.__new__`, then an
        `__init__` written in Python that it steps into, or none at all (`object.__init__`, called
        without arguments: a context manager with only `__enter__`/`__exit__`, as nncf's
        `no_jit_trace`; with arguments it raises, natively, as in eager code)."""
        if not plain_class(cls):
            return False
        init = getattr(cls, "__init__", None)
        if init is object.__init__:
            return not args and not kwargs
        return (
            type(init) is types.FunctionType
            and self.hooks.step_into(init)
            and unsupported_reason(init.__code__) is None
        )

    def _interpreted_function(self, fn: object) -> bool:
        return (
            type(fn) is types.FunctionType
            and self.hooks.step_into(fn)
            and unsupported_reason(fn.__code__) is None
        )

    def _has_python_new(self, cls: type) -> bool:
        """Whether `cls` (metaclass `type`, or `ABCMeta` without abstract methods) has a `__new__`
        written in Python that the interpreter steps into, and an `__init__` that is object's or
        also one it steps into: brevitas's `QuantTensor`, a named tuple whose `__new__` turns its
        arguments into tensors before `super().__new__(cls, ...)`. Run natively, the tensors it
        made were of unknown origin."""
        meta = type(cls)
        if not (meta is type or (meta is abc.ABCMeta and not cls.__abstractmethods__)):
            return False
        init = cls.__init__
        return self._interpreted_function(cls.__new__) and (
            init is object.__init__ or self._interpreted_function(init)
        )

    def _instantiate_with_new(self, cls: type, args: tuple, kwargs: dict) -> Any:
        """What `type.__call__` does: `cls.__new__(cls, ...)`, then, when that made an instance of
        `cls`, its class's `__init__` (none for `object.__init__`, which accepts the arguments when
        `__new__` is overridden)."""
        self.hooks.class_lookup(cls, "__new__")
        obj = self.call(cls.__new__, (cls, *args), kwargs)
        if not isinstance(obj, cls):
            return obj
        self.hooks.class_lookup(type(obj), "__init__")
        return self._initialised(obj, args, kwargs)

    def _instantiate(self, cls: type, args: tuple, kwargs: dict) -> Any:
        self.hooks.class_lookup(cls, "__new__")
        self.hooks.class_lookup(cls, "__init__")
        return self._initialised(self.hooks.fresh(object.__new__(cls)), args, kwargs)

    def _initialised(self, obj: object, args: tuple, kwargs: dict) -> Any:
        """`obj` after its class's `__init__` ran on it (interpreted; none for `object.__init__`)."""
        init = type(obj).__init__
        if init is object.__init__:
            return obj
        result = self.call(init, (obj, *args), kwargs)
        if result is not None:
            raise TypeError(f"__init__() should return None, not '{type(result).__name__}'")
        return obj

    def call_function(self, fn: types.FunctionType, args: tuple, kwargs: dict) -> Any:
        """Interpret the Python function `fn`."""
        code = fn.__code__
        bound = bind_arguments(fn, args, kwargs)
        if code.co_flags & CO_VARKEYWORDS:
            # `**kwargs` is a new dict in every call, as in CPython: the callee may change it freely
            self.hooks.fresh(bound[varkw_name(code)])
        self.hooks.entering(fn, bound)
        frame = Frame(
            func=fn,
            info=code_info(code),
            locals=bound,
            globals=fn.__globals__,
            builtins=builtins_of(fn.__globals__),
        )
        if code.co_flags & CO_GENERATOR:
            self.run_frame(frame)  # runs up to RETURN_GENERATOR
            return InterpretedGenerator(self, frame)
        self.depth += 1  # run here, not in a helper: resumption.break_site reads these Python frames
        self.frames.append(frame)
        try:
            self.run_frame(frame)
            frame.release()  # as CPython clears a returning frame: generators in its locals are closed now
        finally:
            self.depth -= 1
            self.frames.pop()
        return frame.signal_value

    def run_class_body(self, func: types.FunctionType, namespace: dict[str, Any]) -> Any:
        """Interpret a class statement's body function with `namespace` as its locals; returns what
        the body returns (the `__class__` cell, or None). A graph break inside it is refused
        (resumption.break_site does not resume frames entered here)."""
        frame = Frame(
            func=func,
            info=code_info(func.__code__),
            locals={},
            globals=func.__globals__,
            builtins=builtins_of(func.__globals__),
            namespace=namespace,
        )
        self.depth += 1
        self.frames.append(frame)
        try:
            self.run_frame(frame)
            frame.release()
        finally:
            self.depth -= 1
            self.frames.pop()
        return frame.signal_value

    # ------------------------------------------------------------------ loop
    def run_frame(self, frame: Frame, throw: BaseException | None = None) -> None:
        """Run `frame` until it returns, yields or raises; `throw` is raised at the current position
        (a generator's last YIELD_VALUE, as gen.throw() does)."""
        frame.signal = None
        instrs = frame.info.instructions
        handlers = frame.info.handlers
        if throw is not None:
            instr = instrs[frame.pc - 1]
            if not self._unwind(frame, instr, throw):
                record_user_frame(throw, frame, instr)
                raise throw
        while True:
            pc = frame.pc
            instr = instrs[pc]
            frame.pc = pc + 1
            try:
                handlers[pc](self, frame, instr)
            except (Exception, GeneratorExit) as exc:
                opname = instr.opname
                if opname == "RAISE_VARARGS" and instr.arg and hasattr(exc, "__dict__"):
                    exc.__dict__.setdefault(RAISED_BY_PROGRAM_ATTR, True)  # a `raise` statement's
                if opname not in _RERAISES and (opname != "RAISE_VARARGS" or instr.arg):
                    frame.raised_at = (exc, instr)  # a re-raise keeps this line, as CPython's traceback
                    if opname != "RAISE_VARARGS" and exc.__context__ is None:
                        if USER_FRAMES_ATTR not in exc.__dict__:
                            self.chain(exc)  # raised here (natively): chain it as CPython would
                if not self._unwind(frame, instr, exc):
                    record_user_frame(exc, frame, instr)
                    raise
                continue
            if frame.signal is not None:
                return

    def _unwind(self, frame: Frame, instr: dis.Instruction, exc: BaseException) -> bool:
        entry = frame.info.handler_for(instr.offset)
        if entry is None:
            return False
        del frame.stack[entry.depth :]
        if entry.lasti:
            frame.push(instr.offset)
        frame.push(exc)
        frame.jump_to(entry.target)
        return True


#: attribute of an exception escaping interpreted code: where it passed, innermost frame first
USER_FRAMES_ATTR = "_jitlab_user_frames"
#: attribute of an exception raised by a `raise` statement of interpreted code: the program's own
RAISED_BY_PROGRAM_ATTR = "_jitlab_raised_by_program"
#: opcodes that raise an exception again: no chaining, and the traceback keeps the line that raised
#: it first (so does a bare `raise`, RAISE_VARARGS 0; RAISE_VARARGS chains what it raises itself)
_RERAISES = frozenset(("RERAISE", "CLEANUP_THROW"))


def record_user_frame(exc: BaseException, frame: Frame, instr: dis.Instruction) -> None:
    """Note the interpreted frame an exception leaves, so the user sees their own lines in the
    traceback (interpreted frames are not Python frames and would not appear in it)."""
    code = frame.func.__code__
    if frame.raised_at is not None and frame.raised_at[0] is exc:
        instr = frame.raised_at[1]  # re-raised by a cleanup handler: the line that raised it first
    line = instruction_line(instr, code)
    try:
        frames = exc.__dict__.setdefault(USER_FRAMES_ATTR, [])
    except AttributeError:  # exceptions without a __dict__ keep their plain traceback
        return
    frames.append((code.co_filename, line, code.co_name))


def builtins_of(globals_: dict[str, Any]) -> dict[str, Any]:
    """The builtins a function with these globals sees, as CPython finds them."""
    b = globals_.get("__builtins__")
    if isinstance(b, types.ModuleType):
        return b.__dict__
    if isinstance(b, dict):
        return b
    import builtins

    return builtins.__dict__


def plain_class(cls: type) -> bool:
    """Whether `object.__new__` makes the instances of `cls`: metaclass `type`, or `ABCMeta` without
    abstract methods, and no `__new__` of its own. The interpreter builds such objects itself, and a
    cache entry can rebuild them (effects/replay.py)."""
    abstract = type(cls) is abc.ABCMeta and cls.__abstractmethods__
    return (
        type(cls) is type or (type(cls) is abc.ABCMeta and not abstract)
    ) and cls.__new__ is object.__new__


def varkw_name(code: types.CodeType) -> str:
    """The name of the `**kwargs` parameter of a code object that has one."""
    return code.co_varnames[code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & CO_VARARGS)]


def bind_arguments(fn: types.FunctionType, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Bind call arguments to the local variable names of `fn`, as CPython does."""
    code = fn.__code__
    name = fn.__qualname__
    nargs, nposonly, nkwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    names = code.co_varnames
    pos_names = names[:nargs]
    kwonly_names = names[nargs : nargs + nkwonly]
    has_varargs = bool(code.co_flags & CO_VARARGS)
    has_varkw = bool(code.co_flags & CO_VARKEYWORDS)
    bound: dict[str, Any] = {}
    for i, value in enumerate(args[:nargs]):
        bound[pos_names[i]] = value
    extra = args[nargs:]
    if extra and not has_varargs:
        raise TypeError(f"{name}() takes {nargs} positional arguments but {len(args)} were given")
    varkw: dict[str, Any] = {}
    keywordable = set(pos_names[nposonly:]) | set(kwonly_names)
    for key, value in kwargs.items():
        if key in keywordable:
            if key in bound:
                raise TypeError(f"{name}() got multiple values for argument '{key}'")
            bound[key] = value
        elif has_varkw:
            varkw[key] = value
        else:
            raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
    defaults = fn.__defaults__ or ()
    first_default = nargs - len(defaults)
    for i, pname in enumerate(pos_names):
        if pname not in bound:
            if i >= first_default:
                bound[pname] = defaults[i - first_default]
            else:
                raise TypeError(f"{name}() missing required positional argument: '{pname}'")
    kwdefaults = fn.__kwdefaults__ or {}
    for kname in kwonly_names:
        if kname not in bound:
            if kname in kwdefaults:
                bound[kname] = kwdefaults[kname]
            else:
                raise TypeError(f"{name}() missing required keyword-only argument: '{kname}'")
    index = nargs + nkwonly
    if has_varargs:
        bound[names[index]] = tuple(extra)
        index += 1
    if has_varkw:
        bound[names[index]] = varkw
    return bound
