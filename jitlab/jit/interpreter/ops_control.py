"""Handlers for jumps, branches and iteration."""

from __future__ import annotations

import types

from jitlab.jit.interpreter.registry import handler


@handler("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
def JUMP(interp, frame, instr):
    frame.jump_to(instr.argval)


@handler("POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE")
def POP_JUMP_IF_TRUE(interp, frame, instr):
    if interp.hooks.truth(frame.stack.pop()):
        frame.jump_to(instr.argval)


@handler("POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE")
def POP_JUMP_IF_FALSE(interp, frame, instr):
    if not interp.hooks.truth(frame.stack.pop()):
        frame.jump_to(instr.argval)


@handler("POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE")
def POP_JUMP_IF_NONE(interp, frame, instr):
    if frame.stack.pop() is None:
        frame.jump_to(instr.argval)


@handler("POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE")
def POP_JUMP_IF_NOT_NONE(interp, frame, instr):
    if frame.stack.pop() is not None:
        frame.jump_to(instr.argval)


@handler("JUMP_IF_TRUE_OR_POP")
def JUMP_IF_TRUE_OR_POP(interp, frame, instr):
    if interp.hooks.truth(frame.stack[-1]):
        frame.jump_to(instr.argval)
    else:
        frame.stack.pop()


@handler("JUMP_IF_FALSE_OR_POP")
def JUMP_IF_FALSE_OR_POP(interp, frame, instr):
    if not interp.hooks.truth(frame.stack[-1]):
        frame.jump_to(instr.argval)
    else:
        frame.stack.pop()


def _user_special(interp, obj, name):
    """The user-written special method `name` of type(obj), bound to obj, or None."""
    fn = getattr(type(obj), name, None)
    if type(fn) is types.FunctionType and interp.hooks.step_into(fn):
        return fn
    return None


@handler("GET_ITER")
def GET_ITER(interp, frame, instr):
    obj = frame.stack.pop()
    special = _user_special(interp, obj, "__iter__")
    if special is not None:
        frame.stack.append(interp.call(special, (obj,), {}))
    else:
        frame.stack.append(interp.hooks.get_iter(obj))


@handler("FOR_ITER")
def FOR_ITER(interp, frame, instr):
    it = frame.stack[-1]
    special = _user_special(interp, it, "__next__")
    try:
        value = interp.call(special, (it,), {}) if special is not None else next(it)
    except StopIteration:
        frame.stack.pop()
        frame.jump_to(instr.argval)
        return
    frame.stack.append(value)
