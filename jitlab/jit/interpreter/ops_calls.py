"""Handlers for returns, yields and delegation that are the same in 3.11-3.13, and the call and
function-creation helpers the version modules share.

Where CALL, CALL_FUNCTION_EX and MAKE_FUNCTION find their operands differs by version (NULL below or
above the callable, keyword names from KW_NAMES or from the stack, function attributes as MAKE_FUNCTION
flags or SET_FUNCTION_ATTRIBUTE): see py311.py, py312.py and py313.py.
"""

from __future__ import annotations

import types

from jitlab.jit.interpreter.generators import InterpretedGenerator
from jitlab.jit.interpreter.registry import handler


def _zero_arg_super(frame):
    """`super()` without arguments: the `__class__` cell and the frame's first argument."""
    code = frame.code
    cell = frame.locals.get("__class__")
    if not isinstance(cell, types.CellType):
        raise RuntimeError("super(): __class__ cell not found")
    if code.co_argcount == 0 and not code.co_flags & 0x04:
        raise RuntimeError("super(): no arguments")
    first_name = code.co_varnames[0]
    first = frame.locals.get(first_name)
    if first_name in code.co_cellvars and isinstance(first, types.CellType):
        first = first.cell_contents
    return super(cell.cell_contents, first)


def call(interp, frame, fn, args, kwargs):
    """The call every CALL-family handler makes, once it has found callable and arguments."""
    if fn is super and not args and not kwargs:
        return _zero_arg_super(frame)
    if interp.hooks.pending_texts:  # strings whose text no one read yet (Hooks.lazy_format)
        settled = interp.hooks.settle_texts(fn, tuple(args), kwargs)
        if settled is None:
            return None  # the hooks know the call does nothing (an assertion that holds)
        fn, args, kwargs = settled
    return interp.call(fn, tuple(args), kwargs)


def call_with_kwnames(interp, frame, fn, args, kwnames):
    """CALL with keyword names: the last len(kwnames) arguments are passed by keyword."""
    if kwnames:
        split = len(args) - len(kwnames)
        return call(interp, frame, fn, args[:split], dict(zip(kwnames, args[split:])))
    return call(interp, frame, fn, args, {})


def call_function_ex(interp, frame, fn, args, kwargs):
    """CALL_FUNCTION_EX once its operands are popped: `fn(*args, **kwargs)`."""
    if type(args) is not tuple:
        args = tuple(interp.hooks.call_native(tuple, (args,), {}))
    if type(kwargs) is not dict:
        kwargs = dict(interp.hooks.call_native(dict, (kwargs,), {}))
    return call(interp, frame, fn, args, kwargs)


#: MAKE_FUNCTION's flags (3.11, 3.12) and SET_FUNCTION_ATTRIBUTE's oparg (3.13)
FN_DEFAULTS, FN_KWDEFAULTS, FN_ANNOTATIONS, FN_CLOSURE = 0x01, 0x02, 0x04, 0x08


def make_function(interp, frame, code, flags, pop):
    """Build the function of `code`; `pop()` yields the attributes named by `flags`, closure first
    (the top of the stack), then annotations, keyword defaults and defaults."""
    closure = pop() if flags & FN_CLOSURE else None
    annotations = pop() if flags & FN_ANNOTATIONS else None
    kwdefaults = pop() if flags & FN_KWDEFAULTS else None
    defaults = pop() if flags & FN_DEFAULTS else None
    fn = types.FunctionType(code, frame.globals, code.co_name, defaults, closure)
    fn.__qualname__ = code.co_qualname
    if kwdefaults is not None:
        fn.__kwdefaults__ = kwdefaults
    if annotations is not None:
        if isinstance(annotations, tuple):
            annotations = dict(zip(annotations[::2], annotations[1::2]))
        fn.__annotations__ = annotations
    interp.hooks.fresh(fn)
    interp.hooks.fresh_function(fn)
    return fn


@handler("RETURN_VALUE")
def RETURN_VALUE(interp, frame, instr):
    frame.signal_value = frame.stack.pop()
    frame.signal = "return"


@handler("RETURN_GENERATOR")
def RETURN_GENERATOR(interp, frame, instr):
    frame.signal = "generator"


@handler("YIELD_VALUE")
def YIELD_VALUE(interp, frame, instr):
    frame.signal_value = frame.stack.pop()
    frame.signal = "yield"


@handler("GET_YIELD_FROM_ITER")
def GET_YIELD_FROM_ITER(interp, frame, instr):
    top = frame.stack[-1]
    if not isinstance(top, (types.GeneratorType, InterpretedGenerator)):
        frame.stack[-1] = interp.hooks.get_iter(top)


def send(receiver, value):
    """What SEND does to the receiver (PyIter_Send): next() for None on an iterator, else .send()."""
    if value is None and hasattr(type(receiver), "__next__"):
        return next(receiver)
    return receiver.send(value)
