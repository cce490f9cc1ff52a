"""The values a capture reads from tensor data into Python: ints that keep their graph node
(`DataInt`), and values re-checked on every hit (`Speculation`). Apart from the recorder that makes
them, since the tracer, the break machinery and the lookasides all test for them."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch.fx as fx

SIZE = "size"  # marks a lazy int that is a size read by Python (GraphRecorder.lazy_floats entries)
#: meta key of a node computing an int read from tensor data for a compiler, its value (compiled_ints.py)
DATA_INT = "jit_data_int"


class DataInt(int):
    """An int read from tensor data during a capture with the eager backend (`.item()` of an integer
    tensor, `int(t)`, a size of a data-dependent shape, arithmetic on those).

    Small ints are shared objects in CPython, so a plain int cannot be told apart from the literal `2`
    by identity; this subclass gives every data-dependent int its own identity, which is how the
    recorder maps it back to its graph node when it is handed to a tensor operation.
    """

    __slots__ = ()


@dataclass
class Speculation:
    """A Python value computed from tensor data during capture, re-checked on every hit."""

    check: Callable[..., Any]  # callable(*tensors) -> value
    nodes: list[fx.Node]
    expected: object
    text: str
    # a truth decision (`if t:`, `if a > b:` on graph values): the node whose truth is the decision
    truth: fx.Node | None = None
    # what raises when the value differs (a distribution's validation of its parameters): then the
    # entry is not specialised on the value, it checks it, and every call that does not raise is its
    raises: str | None = None
    # the user's `file:line` that computed the value (the innermost interpreted frame's line then)
    where: str | None = None


def bits_key(value: object) -> object:
    """Floats by their bits, inside lists and tuples: what `==` does not tell apart (-0.0, 0.0), and
    NaNs, which `==` never finds equal (`float.hex` gives "nan" whatever the sign bit, which
    `math.copysign` reads: a NaN is keyed by its eight bytes)."""
    if type(value) is float:
        return value.hex() if value == value else struct.pack("<d", value)
    if type(value) in (list, tuple):
        return tuple(bits_key(v) for v in value)
    return value


def _any_float(value: object, test: Callable[[float], bool]) -> bool:
    """Whether `value`, a float or a list or tuple of them (nested), holds a float passing `test`."""
    if type(value) is float:
        return test(value)
    return type(value) in (list, tuple) and any(_any_float(v, test) for v in value)


def _has_zero_float(value: object) -> bool:
    return _any_float(value, lambda f: f == 0.0)


def has_nan(value: object) -> bool:
    """Whether a value holds a NaN: such a value never equals itself, so a speculation compares its
    `bits_key` instead."""
    return _any_float(value, lambda f: f != f)


def strictly_differs(value: object, expected: object) -> bool:
    """`value != expected`, with `-0.0` and `0.0` apart: `1 / x` or `math.copysign` tells them apart."""
    return value != expected or bits_key(value) != bits_key(expected)


def mismatch(const: Callable[[object, str], str], value_expr: str, expected: object) -> str:
    """The generated test that a speculation's value differs from `expected` (`const` names objects
    in the generated code). Plain `!=` unless a zero float is expected, where the sign counts too."""
    name = const(expected, "EXP")
    if _has_zero_float(expected):
        return f"{const(strictly_differs, 'DIFFERS')}({value_expr}, {name})"
    return f"{value_expr} != {name}"
