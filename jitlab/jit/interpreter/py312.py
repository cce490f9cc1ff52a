"""What CPython 3.12 changed in the bytecode, and which of it 3.13 kept (`versions=SINCE_312`).

- Comprehensions are inlined (PEP 709): LOAD_FAST_AND_CLEAR saves a name the comprehension reuses (or
  NULL when it was unbound) and STORE_FAST puts it back afterwards; LOAD_FAST_CHECK loads a local that
  may be unbound.
- Loops: FOR_ITER, once exhausted, pops the iterator and jumps past the END_FOR at its target.
- `yield from`: SEND keeps the receiver under the return value (END_SEND removes it), and a
  throw() into the delegate ends in CLEANUP_THROW; a generator turns an escaping StopIteration into
  RuntimeError through CALL_INTRINSIC_1.
- New: RETURN_CONST, BINARY_SLICE/STORE_SLICE, CALL_INTRINSIC_1 (unary plus, list to tuple and the
  StopIteration guard are run; the rest is type-parameter and module-level machinery, left native),
  LOAD_SUPER_ATTR (`super().name`), conditional jumps without a direction in their name.
- LOAD_ATTR's low oparg bit asks for a method: NULL is pushed *below* the attribute (3.13 moved it above:
  see py313.py, which also has 3.13's own changes).
"""

from __future__ import annotations

import bisect

from jitlab.jit.interpreter.frame import NULL, UNBOUND
from jitlab.jit.interpreter.opcodes import PY312, PY313
from jitlab.jit.interpreter.ops_arith import unary_positive
from jitlab.jit.interpreter.ops_calls import send
from jitlab.jit.interpreter.ops_control import EXHAUSTED, next_item
from jitlab.jit.interpreter.ops_names import load_attribute, load_subscript
from jitlab.jit.interpreter.ops_stack import load_local
from jitlab.jit.interpreter.registry import behaviour, handler

SINCE_312 = (PY312, PY313)


# ------------------------------------------------------------------ locals and constants
@handler("LOAD_FAST_CHECK", versions=SINCE_312)
def LOAD_FAST_CHECK(interp, frame, instr):
    frame.stack.append(load_local(frame, instr.argval))


@handler("LOAD_FAST_AND_CLEAR", versions=SINCE_312)
def LOAD_FAST_AND_CLEAR(interp, frame, instr):
    """Push the local (NULL if unbound) and unbind it."""
    frame.stack.append(frame.locals.pop(instr.argval, UNBOUND))


@handler("RETURN_CONST", versions=SINCE_312)
def RETURN_CONST(interp, frame, instr):
    frame.signal_value = instr.argval
    frame.signal = "return"


# ------------------------------------------------------------------ slices
@handler("BINARY_SLICE", versions=SINCE_312)
def BINARY_SLICE(interp, frame, instr):
    """Stack: container, start, stop -> container[start:stop]."""
    stop = frame.stack.pop()
    start = frame.stack.pop()
    container = frame.stack.pop()
    frame.stack.append(load_subscript(interp, container, slice(start, stop)))


@handler("STORE_SLICE", versions=SINCE_312)
def STORE_SLICE(interp, frame, instr):
    """Stack: value, container, start, stop -> container[start:stop] = value."""
    stop = frame.stack.pop()
    start = frame.stack.pop()
    container = frame.stack.pop()
    value = frame.stack.pop()
    interp.hooks.store_item(container, slice(start, stop), value)


# ------------------------------------------------------------------ intrinsics
INTRINSIC_STOPITERATION_ERROR, INTRINSIC_UNARY_POSITIVE, INTRINSIC_LIST_TO_TUPLE = 3, 5, 6
_INTRINSIC_1_NAMES = (
    "INTRINSIC_1_INVALID", "INTRINSIC_PRINT", "INTRINSIC_IMPORT_STAR", "INTRINSIC_STOPITERATION_ERROR",
    "INTRINSIC_ASYNC_GEN_WRAP", "INTRINSIC_UNARY_POSITIVE", "INTRINSIC_LIST_TO_TUPLE", "INTRINSIC_TYPEVAR",
    "INTRINSIC_PARAMSPEC", "INTRINSIC_TYPEVARTUPLE", "INTRINSIC_SUBSCRIPT_GENERIC", "INTRINSIC_TYPEALIAS",
)  # fmt: skip


def _stopiteration_error(exc):
    """A StopIteration escaping a generator becomes RuntimeError, caused by it (other exceptions pass)."""
    if isinstance(exc, StopIteration):
        error = RuntimeError("generator raised StopIteration")
        error.__cause__ = exc  # also sets __suppress_context__
        error.__context__ = exc
        return error
    return exc


_INTRINSICS_1 = {
    INTRINSIC_STOPITERATION_ERROR: lambda interp, value: _stopiteration_error(value),
    INTRINSIC_UNARY_POSITIVE: unary_positive,
    INTRINSIC_LIST_TO_TUPLE: lambda interp, value: tuple(value),
}


def _check_intrinsic_1(instr, instructions, index):
    if instr.arg in _INTRINSICS_1:
        return None
    name = _INTRINSIC_1_NAMES[instr.arg] if instr.arg < len(_INTRINSIC_1_NAMES) else str(instr.arg)
    return f"CALL_INTRINSIC_1 {name} is not supported"


@handler("CALL_INTRINSIC_1", versions=SINCE_312, check=_check_intrinsic_1)
def CALL_INTRINSIC_1(interp, frame, instr):
    frame.stack.append(_INTRINSICS_1[instr.arg](interp, frame.stack.pop()))


# ------------------------------------------------------------------ jumps and loops
@handler("POP_JUMP_IF_TRUE", versions=(PY312,))
def POP_JUMP_IF_TRUE(interp, frame, instr):
    if interp.hooks.truth(frame.stack.pop()):
        frame.jump_to(instr.argval)


@handler("POP_JUMP_IF_FALSE", versions=(PY312,))
def POP_JUMP_IF_FALSE(interp, frame, instr):
    if not interp.hooks.truth(frame.stack.pop()):
        frame.jump_to(instr.argval)


@handler("POP_JUMP_IF_NONE", versions=SINCE_312)
def POP_JUMP_IF_NONE(interp, frame, instr):
    if frame.stack.pop() is None:
        frame.jump_to(instr.argval)


@handler("POP_JUMP_IF_NOT_NONE", versions=SINCE_312)
def POP_JUMP_IF_NOT_NONE(interp, frame, instr):
    if frame.stack.pop() is not None:
        frame.jump_to(instr.argval)


def check_for_iter_exit(*expected: str):
    """FOR_ITER's target must start with `expected` (END_FOR, and in 3.13 POP_TOP), which it skips."""

    def check(instr, instructions, index):
        target = bisect.bisect_left(instructions, instr.argval, key=lambda ins: ins.offset)  # sorted
        at_target = instructions[target : target + len(expected)]
        found = (
            tuple(i.opname for i in at_target) if at_target and at_target[0].offset == instr.argval else ()
        )
        if found != expected:
            return f"FOR_ITER at offset {instr.offset} does not jump to {' + '.join(expected)}"
        return None

    return check


@handler("FOR_ITER", versions=(PY312,), check=check_for_iter_exit("END_FOR"))
def FOR_ITER(interp, frame, instr):
    """Exhausted: pop the iterator and continue after the END_FOR the oparg points at."""
    value = next_item(interp, frame.stack[-1])
    if value is EXHAUSTED:
        frame.stack.pop()
        frame.pc = frame.info.index_of(instr.argval) + 1
    else:
        frame.stack.append(value)


@handler("END_FOR", versions=(PY312,))
def END_FOR(interp, frame, instr):
    """POP_TOP twice (FOR_ITER jumps over it; kept exact for any other way in)."""
    del frame.stack[-2:]


# ------------------------------------------------------------------ yield from
@handler("SEND", versions=SINCE_312)
def SEND(interp, frame, instr):
    """Stack: receiver, value. Returned: receiver, return value, and the jump to END_SEND."""
    value = frame.stack.pop()
    try:
        result = send(frame.stack[-1], value)
    except StopIteration as stop:
        frame.stack.append(stop.value)
        frame.jump_to(instr.argval)
        return
    frame.stack.append(result)


@handler("END_SEND", versions=SINCE_312)
def END_SEND(interp, frame, instr):
    value = frame.stack.pop()
    frame.stack[-1] = value


@handler("CLEANUP_THROW", versions=SINCE_312)
def CLEANUP_THROW(interp, frame, instr):
    """After throw() into a `yield from`: a StopIteration is the delegate's return value (stack:
    sub-iterator, last sent value, exception -> None, value); anything else is raised again."""
    exc = frame.stack.pop()
    if not isinstance(exc, StopIteration):
        raise exc
    del frame.stack[-2:]
    frame.stack.append(None)
    frame.stack.append(exc.value)


@behaviour("resume_after_delegate_raised", versions=SINCE_312)
def resume_after_delegate_raised(gen, exc):
    """gen.throw() after the `yield from` delegate raised: raise it at the yield; the bytecode's
    CLEANUP_THROW handler takes a StopIteration as the delegate's return value."""
    return gen._resume(None, exc)


# ------------------------------------------------------------------ attributes
def super_object(interp, frame, instr, global_super, cls, self_):
    """The super object of LOAD_SUPER_ATTR: bit 1 of the oparg means `super(cls, self)` was written;
    without it, `super()` (the compiler loaded `__class__` and the first argument for it)."""
    if instr.arg & 2:
        return interp.call(global_super, (cls, self_), {})
    if global_super is super:
        return super(cls, self_)
    return interp.call(global_super, (), {})  # `super` rebound in the module: call it as written


@handler("LOAD_SUPER_ATTR", versions=(PY312,))
def LOAD_SUPER_ATTR(interp, frame, instr):
    """Stack: global super, class, self -> [NULL if the low bit,] super(...).name."""
    self_ = frame.stack.pop()
    cls = frame.stack.pop()
    global_super = frame.stack.pop()
    attr = load_attribute(interp, super_object(interp, frame, instr, global_super, cls, self_), instr.argval)
    if instr.arg & 1:
        frame.stack.append(NULL)
    frame.stack.append(attr)


@handler("LOAD_ATTR", versions=(PY312,))
def LOAD_ATTR(interp, frame, instr):
    """The low oparg bit asks for a method: NULL and the bound attribute (the same call as CPython's
    unbound method and self)."""
    obj = frame.stack.pop()
    if instr.arg & 1:
        frame.stack.append(NULL)
    frame.stack.append(load_attribute(interp, obj, instr.argval))
