"""What CPython 3.13 changed in the bytecode (on top of 3.12's changes, in py312.py).

- NULL moved *above* the callable: LOAD_GLOBAL, LOAD_ATTR and LOAD_SUPER_ATTR push it after the value,
  CALL and CALL_FUNCTION_EX find `callable, self_or_NULL, args...`.
- Keyword calls: CALL_KW takes the tuple of keyword names from the top of the stack (no KW_NAMES).
- Truth: TO_BOOL converts to bool; conditional jumps and UNARY_NOT then only see bools; COMPARE_OP's
  oparg is `op << 5`, and bit 4 asks for the result as a bool (it replaces a TO_BOOL).
- MAKE_FUNCTION takes only the code; each SET_FUNCTION_ATTRIBUTE that follows adds the closure,
  annotations, keyword defaults or defaults. They are run as one step here, because a function with
  free variables can only be created with its closure.
- f-strings: CONVERT_VALUE (!s/!r/!a), FORMAT_SIMPLE and FORMAT_WITH_SPEC replace FORMAT_VALUE.
- FOR_ITER, once exhausted, skips END_FOR *and* the POP_TOP after it; END_FOR pops one value.
- Fused locals: LOAD_FAST_LOAD_FAST, STORE_FAST_LOAD_FAST, STORE_FAST_STORE_FAST.
- gen.close() returns the value the generator returned on GeneratorExit.
"""

from __future__ import annotations

from jitlab.jit.interpreter.frame import NULL
from jitlab.jit.interpreter.opcodes import PY313
from jitlab.jit.interpreter.ops_arith import compare, convert_value, format_value
from jitlab.jit.interpreter.ops_calls import call_function_ex, call_with_kwnames, make_function
from jitlab.jit.interpreter.ops_control import EXHAUSTED, next_item
from jitlab.jit.interpreter.ops_names import load_attribute
from jitlab.jit.interpreter.ops_stack import load_local, store_local
from jitlab.jit.interpreter.py312 import check_for_iter_exit, super_object
from jitlab.jit.interpreter.registry import behaviour, handler

ONLY_313 = (PY313,)


# ------------------------------------------------------------------ NULL above the callable
@handler("LOAD_GLOBAL", versions=ONLY_313)
def LOAD_GLOBAL(interp, frame, instr):
    frame.stack.append(interp.hooks.load_global(frame.globals, instr.argval))
    if instr.arg & 1:
        frame.stack.append(NULL)


@handler("LOAD_ATTR", versions=ONLY_313)
def LOAD_ATTR(interp, frame, instr):
    """The low oparg bit asks for a method: the bound attribute and NULL (the same call as CPython's
    unbound method and self)."""
    frame.stack.append(load_attribute(interp, frame.stack.pop(), instr.argval))
    if instr.arg & 1:
        frame.stack.append(NULL)


@handler("LOAD_SUPER_ATTR", versions=ONLY_313)
def LOAD_SUPER_ATTR(interp, frame, instr):
    """Stack: global super, class, self -> super(...).name[, NULL if the low bit]."""
    self_ = frame.stack.pop()
    cls = frame.stack.pop()
    global_super = frame.stack.pop()
    frame.stack.append(
        load_attribute(interp, super_object(interp, frame, instr, global_super, cls, self_), instr.argval)
    )
    if instr.arg & 1:
        frame.stack.append(NULL)


def _call(interp, frame, nargs, kwnames):
    """Stack: callable, self or NULL, nargs arguments (the last len(kwnames) by keyword)."""
    stack = frame.stack
    base = len(stack) - nargs - 2
    fn, self_or_null = stack[base], stack[base + 1]
    args = stack[base + 2 :]
    del stack[base:]
    if self_or_null is not NULL:
        args.insert(0, self_or_null)
    stack.append(call_with_kwnames(interp, frame, fn, args, kwnames))


@handler("CALL", versions=ONLY_313)
def CALL(interp, frame, instr):
    _call(interp, frame, instr.arg, ())


@handler("CALL_KW", versions=ONLY_313)
def CALL_KW(interp, frame, instr):
    kwnames = frame.stack.pop()
    _call(interp, frame, instr.arg, kwnames)


@handler("CALL_FUNCTION_EX", versions=ONLY_313)
def CALL_FUNCTION_EX(interp, frame, instr):
    """Stack: callable, NULL, args tuple[, kwargs dict]."""
    stack = frame.stack
    kwargs = stack.pop() if instr.arg & 1 else {}
    args = stack.pop()
    stack.pop()  # NULL
    fn = stack.pop()
    stack.append(call_function_ex(interp, frame, fn, args, kwargs))


# ------------------------------------------------------------------ functions
def _check_set_function_attribute(instr, instructions, index):
    """Each SET_FUNCTION_ATTRIBUTE must follow MAKE_FUNCTION or one with a larger flag (the order the
    compiler emits: closure, annotations, kwdefaults, defaults), so MAKE_FUNCTION can run them all."""
    previous = instructions[index - 1] if index else None
    if previous is not None and (
        previous.opname == "MAKE_FUNCTION"
        or (previous.opname == "SET_FUNCTION_ATTRIBUTE" and previous.arg > instr.arg)
    ):
        return None
    return f"SET_FUNCTION_ATTRIBUTE at offset {instr.offset} does not follow MAKE_FUNCTION"


@handler("MAKE_FUNCTION", versions=ONLY_313)
def MAKE_FUNCTION(interp, frame, instr):
    """The code object, then the SET_FUNCTION_ATTRIBUTE run after it, whose values lie below the code
    in the same order as 3.12's MAKE_FUNCTION flags (closure on top)."""
    code = frame.stack.pop()
    instructions = frame.info.instructions
    flags = 0
    while frame.pc < len(instructions) and instructions[frame.pc].opname == "SET_FUNCTION_ATTRIBUTE":
        flags |= instructions[frame.pc].arg
        frame.pc += 1
    frame.stack.append(make_function(interp, frame, code, flags, frame.stack.pop))


@handler("SET_FUNCTION_ATTRIBUTE", versions=ONLY_313, check=_check_set_function_attribute)
def SET_FUNCTION_ATTRIBUTE(interp, frame, instr):
    raise AssertionError("SET_FUNCTION_ATTRIBUTE runs as part of the MAKE_FUNCTION before it")


# ------------------------------------------------------------------ truth and comparisons
@handler("TO_BOOL", versions=ONLY_313)
def TO_BOOL(interp, frame, instr):
    frame.stack.append(interp.hooks.truth(frame.stack.pop()))


@handler("POP_JUMP_IF_TRUE", versions=ONLY_313)
def POP_JUMP_IF_TRUE(interp, frame, instr):
    """The condition is a bool (TO_BOOL or a comparison made it one)."""
    if frame.stack.pop() is True:
        frame.jump_to(instr.argval)


@handler("POP_JUMP_IF_FALSE", versions=ONLY_313)
def POP_JUMP_IF_FALSE(interp, frame, instr):
    if frame.stack.pop() is False:
        frame.jump_to(instr.argval)


@handler("COMPARE_OP", versions=ONLY_313)
def COMPARE_OP(interp, frame, instr):
    """`dis` decodes the comparison (`cmp_op[oparg >> 5]`); bit 4 converts the result to bool."""
    right = frame.stack.pop()
    left = frame.stack.pop()
    result = compare(interp, left, right, instr.argval)
    if instr.arg & 16:
        result = interp.hooks.truth(result)
    frame.stack.append(result)


# ------------------------------------------------------------------ f-strings
@handler("CONVERT_VALUE", versions=ONLY_313)
def CONVERT_VALUE(interp, frame, instr):
    frame.stack.append(convert_value(interp, frame, frame.stack.pop(), instr.arg))


@handler("FORMAT_SIMPLE", versions=ONLY_313)
def FORMAT_SIMPLE(interp, frame, instr):
    frame.stack.append(format_value(interp, frame, frame.stack.pop(), ""))


@handler("FORMAT_WITH_SPEC", versions=ONLY_313)
def FORMAT_WITH_SPEC(interp, frame, instr):
    spec = frame.stack.pop()
    frame.stack.append(format_value(interp, frame, frame.stack.pop(), spec))


# ------------------------------------------------------------------ loops
@handler("FOR_ITER", versions=ONLY_313, check=check_for_iter_exit("END_FOR", "POP_TOP"))
def FOR_ITER(interp, frame, instr):
    """Exhausted: pop the iterator and continue after the END_FOR and POP_TOP the oparg points at."""
    value = next_item(interp, frame.stack[-1])
    if value is EXHAUSTED:
        frame.stack.pop()
        frame.pc = frame.info.index_of(instr.argval) + 2
    else:
        frame.stack.append(value)


@handler("END_FOR", versions=ONLY_313)
def END_FOR(interp, frame, instr):
    frame.stack.pop()


# ------------------------------------------------------------------ fused locals
def _check_two_names(instr, instructions, index):
    names = instr.argval
    if isinstance(names, tuple) and len(names) == 2 and all(isinstance(n, str) for n in names):
        return None
    return f"{instr.opname} at offset {instr.offset}: unexpected operand {names!r}"


@handler("LOAD_FAST_LOAD_FAST", versions=ONLY_313, check=_check_two_names)
def LOAD_FAST_LOAD_FAST(interp, frame, instr):
    first, second = instr.argval
    frame.stack.append(load_local(frame, first))
    frame.stack.append(load_local(frame, second))


@handler("STORE_FAST_LOAD_FAST", versions=ONLY_313, check=_check_two_names)
def STORE_FAST_LOAD_FAST(interp, frame, instr):
    store, load = instr.argval
    store_local(frame, store, frame.stack.pop())
    frame.stack.append(load_local(frame, load))


@handler("STORE_FAST_STORE_FAST", versions=ONLY_313, check=_check_two_names)
def STORE_FAST_STORE_FAST(interp, frame, instr):
    """The top of the stack goes to the first name, the value below it to the second."""
    first, second = instr.argval
    store_local(frame, first, frame.stack.pop())
    store_local(frame, second, frame.stack.pop())


@behaviour("close_result", versions=ONLY_313)
def close_result(value):
    """gen.close() returns what the generator returned when GeneratorExit reached it."""
    return value
