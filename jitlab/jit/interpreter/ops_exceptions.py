"""Handlers for raising and handling exceptions and for `with` blocks (zero-cost exceptions, the same
in 3.11-3.13).

The exception table does the unwinding (see `Interpreter._unwind`); these handlers keep the
"exception being handled" (`interp.exc_info`) the way CPython's PUSH_EXC_INFO / POP_EXCEPT do.
"""

from __future__ import annotations

import types

from jitlab.jit.interpreter.ops_control import class_special
from jitlab.jit.interpreter.registry import handler


@handler("PUSH_EXC_INFO")
def PUSH_EXC_INFO(interp, frame, instr):
    value = frame.stack.pop()
    frame.stack.append(interp.exc_info)
    interp.exc_info = value
    frame.stack.append(value)


@handler("POP_EXCEPT")
def POP_EXCEPT(interp, frame, instr):
    interp.exc_info = frame.stack.pop()


@handler("RERAISE")
def RERAISE(interp, frame, instr):
    raise frame.stack.pop()


def _as_exception(value):
    if isinstance(value, type) and issubclass(value, BaseException):
        return value()
    if isinstance(value, BaseException):
        return value
    raise TypeError("exceptions must derive from BaseException")


@handler("RAISE_VARARGS")
def RAISE_VARARGS(interp, frame, instr):
    if instr.arg == 0:
        handled = interp.handled_exception()
        if handled is None:
            error = RuntimeError("No active exception to reraise")
            interp.chain(error)
            raise error
        raise handled
    cause = frame.stack.pop() if instr.arg == 2 else None
    exc = _as_exception(frame.stack.pop())
    if instr.arg == 2:
        if cause is None:
            exc.__cause__ = None
        else:
            exc.__cause__ = _as_exception(cause)
        exc.__suppress_context__ = True
    interp.chain(exc)
    raise exc


@handler("CHECK_EXC_MATCH")
def CHECK_EXC_MATCH(interp, frame, instr):
    right = frame.stack.pop()
    left = frame.stack[-1]
    classes = right if isinstance(right, tuple) else (right,)
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            raise TypeError("catching classes that do not inherit from BaseException is not allowed")
    frame.stack.append(isinstance(left, right))


@handler("LOAD_ASSERTION_ERROR")
def LOAD_ASSERTION_ERROR(interp, frame, instr):
    frame.stack.append(AssertionError)


def _bound_special(interp, obj, name):
    fn = class_special(interp, type(obj), name)
    if fn is None:
        return None
    if type(fn) is types.FunctionType:
        return types.MethodType(fn, obj)
    if hasattr(fn, "__get__"):
        return fn.__get__(obj, type(obj))
    return fn


@handler("BEFORE_WITH")
def BEFORE_WITH(interp, frame, instr):
    mgr = frame.stack.pop()
    enter = _bound_special(interp, mgr, "__enter__")
    exit_ = _bound_special(interp, mgr, "__exit__")
    if enter is None or exit_ is None:
        raise TypeError(f"'{type(mgr).__name__}' object does not support the context manager protocol")
    frame.stack.append(exit_)
    frame.stack.append(interp.call(enter, (), {}))


@handler("WITH_EXCEPT_START")
def WITH_EXCEPT_START(interp, frame, instr):
    exc = frame.stack[-1]
    exit_ = frame.stack[-4]
    frame.stack.append(interp.call(exit_, (type(exc), exc, exc.__traceback__), {}))
