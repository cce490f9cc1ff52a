"""Handlers for jumps and iteration that are the same in 3.11-3.13, and the helpers of those that are
not (conditional jumps were renamed in 3.12, FOR_ITER's exit changed in 3.12 and 3.13: see py311.py,
py312.py and py313.py)."""

from __future__ import annotations

import types

from jitlab.jit.interpreter.registry import handler


@handler("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
def JUMP(interp, frame, instr):
    frame.jump_to(instr.argval)


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


EXHAUSTED = object()


def next_item(interp, it):
    """The iterator's next item (through a user-written __next__ when there is one), or EXHAUSTED."""
    special = _user_special(interp, it, "__next__")
    try:
        return interp.call(special, (it,), {}) if special is not None else next(it)
    except StopIteration:
        return EXHAUSTED
