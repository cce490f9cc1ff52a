"""Python arithmetic on data-dependent numbers whose result type depends on the data.

With the eager backend a number read from tensor data (`.item()`) stays a graph value while it only
flows into tensor operations (recorder.lazy_arithmetic). `max(1, loss.item())` is such arithmetic,
but its result is the int 1 or the float, depending on the data: the graph computes it again on every
call, as eager code does, so what the tensor operations that take it get is eager's, whatever its
type. Python code that looks only at the type (`type(m)`, `isinstance(m, float)`) reads no value,
so it would not make the number a speculation (re-checked on every call); for a number whose type
may change it does (`reads_type`). Arithmetic on such a number may change type too (`2 * m`), unless
the operation always gives one type (`m / 2`, `float(m)`, `math.sqrt(m)`).
"""

from __future__ import annotations

import builtins
import math
import operator

_CHOOSERS = frozenset(map(id, (builtins.min, builtins.max)))
# operations whose result has one type whatever the operands' types (ints and floats)
_FIXED_TYPE = frozenset(
    map(
        id,
        (
            operator.truediv, operator.itruediv, float, int, math.sqrt, math.exp, math.log, math.sin,
            math.cos, math.tanh, math.floor, math.ceil,
        ),
    )
)  # fmt: skip


def type_may_change(fn: object, args: tuple, unstable: set[int]) -> bool:
    """Whether `fn(*args)` (numbers) may give an int on one call and a float on another: `min`/`max`
    of an int and a float, or arithmetic of a type-changing number that does not fix the type."""
    if id(fn) in _FIXED_TYPE:
        return False
    if id(fn) in _CHOOSERS and len({type(a) is float for a in args}) > 1:
        return True
    return any(id(a) in unstable for a in args)


def reads_type(fn: object) -> bool:
    """Whether native `fn` looks at the type of the number it is given without reading its value."""
    return fn is type or fn is isinstance
