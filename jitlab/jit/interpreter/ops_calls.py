"""Handlers for calls (KW_NAMES, CALL, CALL_FUNCTION_EX), function creation and returns."""

from __future__ import annotations

import types

from jitlab.jit.interpreter.frame import NULL
from jitlab.jit.interpreter.registry import handler


@handler("KW_NAMES")
def KW_NAMES(interp, frame, instr):
    frame.kw_names = frame.code.co_consts[instr.arg]


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


@handler("CALL")
def CALL(interp, frame, instr):
    n = instr.arg
    stack = frame.stack
    base = len(stack) - n - 2
    head, second = stack[base], stack[base + 1]
    args = stack[base + 2 :]
    del stack[base:]
    if head is NULL:
        fn = second
    else:
        fn = head
        args.insert(0, second)
    kw = frame.kw_names
    if kw:
        frame.kw_names = ()
        split = len(args) - len(kw)
        kwargs = dict(zip(kw, args[split:]))
        args = args[:split]
    else:
        kwargs = {}
    if fn is super and not args and not kwargs:
        stack.append(_zero_arg_super(frame))
        return
    stack.append(interp.call(fn, tuple(args), kwargs))


@handler("CALL_FUNCTION_EX")
def CALL_FUNCTION_EX(interp, frame, instr):
    stack = frame.stack
    kwargs = stack.pop() if instr.arg & 1 else {}
    args = stack.pop()
    fn = stack.pop()
    stack.pop()  # NULL
    if type(args) is not tuple:
        args = tuple(interp.hooks.call_native(tuple, (args,), {}))
    if type(kwargs) is not dict:
        kwargs = dict(interp.hooks.call_native(dict, (kwargs,), {}))
    if fn is super and not args and not kwargs:
        stack.append(_zero_arg_super(frame))
        return
    stack.append(interp.call(fn, args, kwargs))


@handler("MAKE_FUNCTION")
def MAKE_FUNCTION(interp, frame, instr):
    stack = frame.stack
    code = stack.pop()
    flags = instr.arg
    closure = stack.pop() if flags & 0x08 else None
    annotations = stack.pop() if flags & 0x04 else None
    kwdefaults = stack.pop() if flags & 0x02 else None
    defaults = stack.pop() if flags & 0x01 else None
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
    stack.append(fn)


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
    from jitlab.jit.interpreter.core import InterpretedGenerator

    top = frame.stack[-1]
    if not isinstance(top, (types.GeneratorType, InterpretedGenerator)):
        frame.stack[-1] = interp.hooks.get_iter(top)


@handler("SEND")
def SEND(interp, frame, instr):
    value = frame.stack.pop()
    receiver = frame.stack[-1]
    try:
        if value is None:
            result = next(receiver)
        else:
            result = receiver.send(value)
    except StopIteration as stop:
        frame.stack.pop()
        frame.stack.append(stop.value)
        frame.jump_to(instr.argval)
        return
    frame.stack.append(result)
