"""Handlers for unary, binary, comparison, identity and membership operators and formatting.

COMPARE_OP's oparg, unary plus and f-string formatting differ by version: their handlers are in
py311.py and py313.py and use the helpers here.

Operators run natively through `hooks.call_native(operator.x, ...)`, so a tracer sees them like any
other call (tensor operators are recorded by the torch-function mode, reads of outside containers
are guarded).
"""

from __future__ import annotations

import operator

from jitlab.jit.interpreter.frame import text_goes_to_call
from jitlab.jit.interpreter.opcodes import NB_OPS
from jitlab.jit.interpreter.ops_control import class_special, user_special
from jitlab.jit.interpreter.registry import handler

_BINARY = {
    "+": operator.add,
    "&": operator.and_,
    "//": operator.floordiv,
    "<<": operator.lshift,
    "@": operator.matmul,
    "*": operator.mul,
    "%": operator.mod,
    "|": operator.or_,
    "**": operator.pow,
    ">>": operator.rshift,
    "-": operator.sub,
    "/": operator.truediv,
    "^": operator.xor,
    "+=": operator.iadd,
    "&=": operator.iand,
    "//=": operator.ifloordiv,
    "<<=": operator.ilshift,
    "@=": operator.imatmul,
    "*=": operator.imul,
    "%=": operator.imod,
    "|=": operator.ior,
    "**=": operator.ipow,
    ">>=": operator.irshift,
    "-=": operator.isub,
    "/=": operator.itruediv,
    "^=": operator.ixor,
}
BINARY_OPS = tuple(_BINARY[symbol] for symbol in NB_OPS)

COMPARE_OPS = {
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
}


_DUNDER = {
    "+": "add", "&": "and", "//": "floordiv", "<<": "lshift", "@": "matmul", "*": "mul", "%": "mod",
    "|": "or", "**": "pow", ">>": "rshift", "-": "sub", "/": "truediv", "^": "xor",
}  # fmt: skip
_REFLECTED_COMPARE = {"<": ">", "<=": ">=", "==": "==", "!=": "!=", ">": "<", ">=": "<="}
_COMPARE_DUNDER = {"<": "lt", "<=": "le", "==": "eq", "!=": "ne", ">": "gt", ">=": "ge"}


def _protocol(interp, left, right, name, rname, compare=False):
    """CPython's binary-operator protocol, interpreting the user-written special methods.

    Returns NotImplemented when neither side handles the operands. Arithmetic tries the reflected
    method only for operands of different types; rich comparisons always try it."""
    lt, rt = type(left), type(right)
    lm = class_special(interp, lt, name)
    rm = class_special(interp, rt, rname) if (rt is not lt or compare) else None
    if rm is not None and issubclass(rt, lt) and rm is not class_special(interp, lt, rname):
        result = interp.call(rm, (right, left), {})
        if result is not NotImplemented:
            return result
        rm = None
    if lm is not None:
        result = interp.call(lm, (left, right), {})
        if result is not NotImplemented:
            return result
    if rm is not None:
        return interp.call(rm, (right, left), {})
    return NotImplemented


def _has_user_special(interp, left, right, *names):
    return any(user_special(interp, type(v), n) is not None for v in (left, right) for n in names)


@handler("BINARY_OP")
def BINARY_OP(interp, frame, instr):
    right = frame.stack.pop()
    left = frame.stack.pop()
    symbol = NB_OPS[instr.arg]
    base = _DUNDER[symbol.rstrip("=")]
    inplace = symbol.endswith("=") and symbol not in ("<=", ">=")
    names = (f"__{base}__", f"__r{base}__") + ((f"__i{base}__",) if inplace else ())
    if _has_user_special(interp, left, right, *names):
        result = NotImplemented
        iop = class_special(interp, type(left), f"__i{base}__") if inplace else None
        if iop is not None:
            result = interp.call(iop, (left, right), {})
        if result is NotImplemented:
            result = _protocol(interp, left, right, f"__{base}__", f"__r{base}__")
        if result is NotImplemented:
            raise TypeError(
                f"unsupported operand type(s) for {symbol}: '{type(left).__name__}' and '{type(right).__name__}'"
            )
        frame.stack.append(result)
        return
    frame.stack.append(interp.hooks.call_native(BINARY_OPS[instr.arg], (left, right), {}))


def compare(interp, left, right, op):
    """`left <op> right` for op in COMPARE_OPS, interpreting user-written rich comparisons."""
    name = f"__{_COMPARE_DUNDER[op]}__"
    rname = f"__{_COMPARE_DUNDER[_REFLECTED_COMPARE[op]]}__"
    if _has_user_special(interp, left, right, name, rname):
        result = _protocol(interp, left, right, name, rname, compare=True)
        if result is NotImplemented:
            if op == "==":
                result = left is right
            elif op == "!=":
                result = left is not right
            else:
                raise TypeError(
                    f"'{op}' not supported between instances of '{type(left).__name__}' and '{type(right).__name__}'"
                )
        return result
    return interp.hooks.call_native(COMPARE_OPS[op], (left, right), {})


@handler("IS_OP")
def IS_OP(interp, frame, instr):
    right = frame.stack.pop()
    left = frame.stack.pop()
    frame.stack.append((left is not right) if instr.arg else (left is right))


@handler("CONTAINS_OP")
def CONTAINS_OP(interp, frame, instr):
    container = frame.stack.pop()
    item = frame.stack.pop()
    result = interp.hooks.call_native(operator.contains, (container, item), {})
    frame.stack.append(not result if instr.arg else bool(result))


def unary_positive(interp, value):
    return interp.hooks.call_native(operator.pos, (value,), {})


@handler("UNARY_NEGATIVE")
def UNARY_NEGATIVE(interp, frame, instr):
    frame.stack.append(interp.hooks.call_native(operator.neg, (frame.stack.pop(),), {}))


@handler("UNARY_INVERT")
def UNARY_INVERT(interp, frame, instr):
    frame.stack.append(interp.hooks.call_native(operator.invert, (frame.stack.pop(),), {}))


@handler("UNARY_NOT")
def UNARY_NOT(interp, frame, instr):
    frame.stack.append(not interp.hooks.truth(frame.stack.pop()))


#: f-string conversions by number (FORMAT_VALUE's low bits in 3.11/3.12, CONVERT_VALUE's oparg in 3.13)
CONVERSIONS = {0: None, 1: str, 2: repr, 3: ascii}


def convert_value(interp, frame, value, conversion):
    """`!s`, `!r` or `!a` of an f-string replacement field."""
    if text_goes_to_call(frame):
        pending = interp.hooks.lazy_format(value, "", conversion)
        if pending is not None:
            return pending
    return interp.hooks.call_native(CONVERSIONS[conversion], (value,), {})


def format_value(interp, frame, value, spec):
    """PyObject_Format: an exact str formatted with an empty spec is itself, anything else format().
    A string that goes straight into a call may be left to the hooks (Hooks.lazy_format)."""
    if type(value) is str and not spec:
        return value
    if text_goes_to_call(frame):
        pending = interp.hooks.lazy_format(value, spec, 0)
        if pending is not None:
            return pending
    return interp.hooks.call_native(format, (value, spec), {})
