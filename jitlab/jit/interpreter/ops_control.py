"""Handlers for jumps and iteration that are the same in 3.11-3.13, and the helpers of those that are
not (conditional jumps were renamed in 3.12, FOR_ITER's exit changed in 3.12 and 3.13: see py311.py,
py312.py and py313.py)."""

from __future__ import annotations

import types

from jitlab.jit.interpreter.registry import handler


@handler("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
def JUMP(interp, frame, instr):
    frame.jump_to(instr.argval)


def class_special(interp, cls, name):
    """getattr(cls, name, None); the hooks are told when it is user code the interpreter steps into
    (the tracer guards that the class still holds it: class_lookups.py)."""
    fn = getattr(cls, name, None)
    if type(fn) is types.FunctionType and interp.hooks.step_into(fn):
        interp.hooks.class_lookup(cls, name)
    return fn


def user_special(interp, cls, name):
    """The user-written special method `name` of `cls` the interpreter steps into, or None."""
    fn = class_special(interp, cls, name)
    return fn if type(fn) is types.FunctionType and interp.hooks.step_into(fn) else None


def _user_special(interp, obj, name):
    return user_special(interp, type(obj), name)


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
