"""Handlers for stack shuffling, constants, locals and no-ops."""

from __future__ import annotations

from jitlab.jit.interpreter.frame import NULL
from jitlab.jit.interpreter.registry import handler


@handler("NOP", "RESUME", "PRECALL", "EXTENDED_ARG")
def _nop(interp, frame, instr):
    pass


@handler("POP_TOP")
def POP_TOP(interp, frame, instr):
    frame.stack.pop()


@handler("PUSH_NULL")
def PUSH_NULL(interp, frame, instr):
    frame.stack.append(NULL)


@handler("COPY")
def COPY(interp, frame, instr):
    frame.stack.append(frame.stack[-instr.arg])


@handler("SWAP")
def SWAP(interp, frame, instr):
    s = frame.stack
    s[-1], s[-instr.arg] = s[-instr.arg], s[-1]


@handler("LOAD_CONST")
def LOAD_CONST(interp, frame, instr):
    frame.stack.append(instr.argval)


@handler("LOAD_FAST")
def LOAD_FAST(interp, frame, instr):
    try:
        frame.stack.append(frame.locals[instr.argval])
    except KeyError:
        raise UnboundLocalError(
            f"cannot access local variable '{instr.argval}' where it is not associated with a value"
        ) from None


@handler("STORE_FAST")
def STORE_FAST(interp, frame, instr):
    frame.locals[instr.argval] = frame.stack.pop()


@handler("DELETE_FAST")
def DELETE_FAST(interp, frame, instr):
    try:
        del frame.locals[instr.argval]
    except KeyError:
        raise UnboundLocalError(
            f"cannot access local variable '{instr.argval}' where it is not associated with a value"
        ) from None
