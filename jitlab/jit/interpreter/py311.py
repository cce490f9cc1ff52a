"""Opcodes in their CPython 3.11 form, where a later version changed or dropped them.

Each handler names the versions it serves: some 3.11 forms lasted through 3.12 (NULL below the
callable in LOAD_GLOBAL and CALL, keyword names from KW_NAMES, MAKE_FUNCTION's flag bits,
FORMAT_VALUE, COMPARE_OP's oparg read through `dis`), others are 3.11's alone (PRECALL, LOAD_METHOD,
direction-specific conditional jumps, the `or`/`and` jumps, UNARY_POSITIVE, LIST_TO_TUPLE, FOR_ITER
jumping past the loop, SEND popping the receiver). What 3.12 and 3.13 changed is in py312.py and
py313.py.
"""

from __future__ import annotations

from jitlab.jit.interpreter.frame import NULL
from jitlab.jit.interpreter.opcodes import PY311, PY312
from jitlab.jit.interpreter.ops_arith import CONVERSIONS, compare, convert_value, format_value, unary_positive
from jitlab.jit.interpreter.ops_calls import call_function_ex, call_with_kwnames, make_function, send
from jitlab.jit.interpreter.ops_control import EXHAUSTED, next_item
from jitlab.jit.interpreter.ops_names import load_attribute
from jitlab.jit.interpreter.registry import behaviour, handler

UNTIL_312 = (PY311, PY312)


# ------------------------------------------------------------------ 3.11 and 3.12
@handler("LOAD_GLOBAL", versions=UNTIL_312)
def LOAD_GLOBAL(interp, frame, instr):
    """The low bit of the oparg pushes a NULL *below* the global (for a CALL)."""
    if instr.arg & 1:
        frame.stack.append(NULL)
    frame.stack.append(interp.hooks.load_global(frame.globals, instr.argval))


@handler("LOAD_CLOSURE", versions=UNTIL_312)
def LOAD_CLOSURE(interp, frame, instr):
    """The cell itself (a pseudo-instruction turned into LOAD_FAST from 3.13 on)."""
    frame.stack.append(frame.locals[instr.argval])


@handler("KW_NAMES", versions=UNTIL_312)
def KW_NAMES(interp, frame, instr):
    frame.kw_names = frame.code.co_consts[instr.arg]


@handler("CALL", versions=UNTIL_312)
def CALL(interp, frame, instr):
    """Stack: NULL, callable, args... (a function call) or method, self, args... (a method call)."""
    stack = frame.stack
    base = len(stack) - instr.arg - 2
    head, second = stack[base], stack[base + 1]
    args = stack[base + 2 :]
    del stack[base:]
    if head is NULL:
        fn = second
    else:
        fn = head
        args.insert(0, second)
    kwnames = frame.kw_names
    frame.kw_names = ()
    stack.append(call_with_kwnames(interp, frame, fn, args, kwnames))


@handler("CALL_FUNCTION_EX", versions=UNTIL_312)
def CALL_FUNCTION_EX(interp, frame, instr):
    """Stack: NULL, callable, args tuple[, kwargs dict]."""
    stack = frame.stack
    kwargs = stack.pop() if instr.arg & 1 else {}
    args = stack.pop()
    fn = stack.pop()
    stack.pop()  # NULL
    stack.append(call_function_ex(interp, frame, fn, args, kwargs))


@handler("MAKE_FUNCTION", versions=UNTIL_312)
def MAKE_FUNCTION(interp, frame, instr):
    """The oparg's flag bits say which of defaults, kwdefaults, annotations, closure lie below the code."""
    code = frame.stack.pop()
    frame.stack.append(make_function(interp, frame, code, instr.arg, frame.stack.pop))


@handler("COMPARE_OP", versions=UNTIL_312)
def COMPARE_OP(interp, frame, instr):
    """The comparison is `cmp_op[oparg]` in 3.11 and `cmp_op[oparg >> 4]` in 3.12 (`dis` decodes both)."""
    right = frame.stack.pop()
    left = frame.stack.pop()
    frame.stack.append(compare(interp, left, right, instr.argval))


@handler("FORMAT_VALUE", versions=UNTIL_312)
def FORMAT_VALUE(interp, frame, instr):
    """Low two bits: conversion (none, !s, !r, !a); bit 2: a format spec lies on top of the value."""
    spec = frame.stack.pop() if instr.arg & 0x04 else ""
    value = frame.stack.pop()
    if CONVERSIONS[instr.arg & 0x03] is not None:
        value = convert_value(interp, frame, value, instr.arg & 0x03)
    frame.stack.append(format_value(interp, frame, value, spec))


# ------------------------------------------------------------------ 3.11 only
@handler("PRECALL", versions=(PY311,))
def PRECALL(interp, frame, instr):
    pass


@handler("LOAD_ATTR", versions=(PY311,))
def LOAD_ATTR(interp, frame, instr):
    frame.stack.append(load_attribute(interp, frame.stack.pop(), instr.argval))


@handler("LOAD_METHOD", versions=(PY311,))
def LOAD_METHOD(interp, frame, instr):
    """NULL and the bound attribute: a CALL of it is the same as CPython's unbound-method shortcut."""
    obj = frame.stack.pop()
    frame.stack.append(NULL)
    frame.stack.append(load_attribute(interp, obj, instr.argval))


@handler("POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE", versions=(PY311,))
def POP_JUMP_IF_TRUE(interp, frame, instr):
    if interp.hooks.truth(frame.stack.pop()):
        frame.jump_to(instr.argval)


@handler("POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE", versions=(PY311,))
def POP_JUMP_IF_FALSE(interp, frame, instr):
    if not interp.hooks.truth(frame.stack.pop()):
        frame.jump_to(instr.argval)


@handler("POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE", versions=(PY311,))
def POP_JUMP_IF_NONE(interp, frame, instr):
    if frame.stack.pop() is None:
        frame.jump_to(instr.argval)


@handler("POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE", versions=(PY311,))
def POP_JUMP_IF_NOT_NONE(interp, frame, instr):
    if frame.stack.pop() is not None:
        frame.jump_to(instr.argval)


@handler("JUMP_IF_TRUE_OR_POP", versions=(PY311,))
def JUMP_IF_TRUE_OR_POP(interp, frame, instr):
    if interp.hooks.truth(frame.stack[-1]):
        frame.jump_to(instr.argval)
    else:
        frame.stack.pop()


@handler("JUMP_IF_FALSE_OR_POP", versions=(PY311,))
def JUMP_IF_FALSE_OR_POP(interp, frame, instr):
    if not interp.hooks.truth(frame.stack[-1]):
        frame.jump_to(instr.argval)
    else:
        frame.stack.pop()


@handler("UNARY_POSITIVE", versions=(PY311,))
def UNARY_POSITIVE(interp, frame, instr):
    frame.stack.append(unary_positive(interp, frame.stack.pop()))


@handler("LIST_TO_TUPLE", versions=(PY311,))
def LIST_TO_TUPLE(interp, frame, instr):
    frame.stack.append(tuple(frame.stack.pop()))


@handler("FOR_ITER", versions=(PY311,))
def FOR_ITER(interp, frame, instr):
    """Exhausted: pop the iterator and jump to the instruction after the loop."""
    value = next_item(interp, frame.stack[-1])
    if value is EXHAUSTED:
        frame.stack.pop()
        frame.jump_to(instr.argval)
    else:
        frame.stack.append(value)


@handler("SEND", versions=(PY311,))
def SEND(interp, frame, instr):
    """Stack: receiver, value. Returned: the receiver is replaced by the return value, then the jump."""
    value = frame.stack.pop()
    try:
        result = send(frame.stack[-1], value)
    except StopIteration as stop:
        frame.stack[-1] = stop.value
        frame.jump_to(instr.argval)
        return
    frame.stack.append(result)


@behaviour("resume_after_delegate_raised", versions=(PY311,))
def resume_after_delegate_raised(gen, exc):
    """gen.throw() after the `yield from` delegate raised (3.11's _gen_throw): pop the delegate, go to
    the SEND's target, then send its return value there, or raise the exception at that point."""
    frame = gen._frame
    frame.stack.pop()
    send_instr = frame.info.instructions[frame.pc - 2]  # SEND, YIELD_VALUE, (pc:) RESUME
    frame.jump_to(send_instr.argval)
    if isinstance(exc, StopIteration):
        return gen._resume(exc.value, None)
    return gen._resume(None, exc)


@behaviour("close_result", versions=UNTIL_312)
def close_result(value):
    """gen.close() returns None even if the generator returned a value (3.13 returns the value)."""
    return None
