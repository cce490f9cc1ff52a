"""Handlers for stack shuffling, constants, locals and no-ops (the same in 3.11, 3.12 and 3.13)."""

from __future__ import annotations

from jitlab.jit.interpreter.frame import NULL, UNBOUND
from jitlab.jit.interpreter.registry import handler


@handler("NOP", "RESUME", "EXTENDED_ARG")
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
    frame.stack.append(load_local(frame, instr.argval))


def store_local(frame, name, value):
    """SETLOCAL: UNBOUND (3.12+ restores possibly unbound names after an inlined comprehension)
    leaves the local unbound."""
    if value is UNBOUND:
        frame.locals.pop(name, None)
    else:
        frame.locals[name] = value


def load_local(frame, name):
    try:
        return frame.locals[name]
    except KeyError:
        raise UnboundLocalError(
            f"cannot access local variable '{name}' where it is not associated with a value"
        ) from None


@handler("STORE_FAST")
def STORE_FAST(interp, frame, instr):
    store_local(frame, instr.argval, frame.stack.pop())


@handler("DELETE_FAST")
def DELETE_FAST(interp, frame, instr):
    try:
        del frame.locals[instr.argval]
    except KeyError:
        raise UnboundLocalError(
            f"cannot access local variable '{instr.argval}' where it is not associated with a value"
        ) from None
