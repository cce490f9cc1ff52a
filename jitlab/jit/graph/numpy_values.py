"""Numpy arrays read from tensor data (`t.numpy()`, `np.asarray(t)`) as speculations.

An array's `==` is an array, not a truth value, so a speculation cannot compare it directly. It is
compared by a key instead: its type, dtype, shape and raw bytes. Bytes are stricter than
`numpy.array_equal` (a NaN equals the same NaN, but `-0.0` differs from `0.0` and NaNs with other
payloads differ): a stricter check only costs a recapture, never a wrong result, and values whose
sign of zero differs can make numpy code take other paths (`np.signbit`, `1 / a`).

`t.numpy()` shares memory with the tensor: a write through the array changes the tensor without any
torch operation the graph could record. `ArrayWatch` keeps the key of every such array and tells the
recorder when one changed (the capture is then not cached).
"""

from __future__ import annotations

import array
import copy
from typing import Any

#: torch functions whose tensor may share memory with a first argument that is no tensor (an array,
#: a buffer): `torch.as_tensor(a)`, `torch.asarray(a)`, `torch.frombuffer(b)`
_SHARING_CONSTRUCTORS = frozenset({"as_tensor", "asarray", "frombuffer"})
_BUFFER_TYPES = (bytearray, array.array)


def is_ndarray(value: object) -> bool:
    """Whether `value` is a numpy array (numpy is imported by torch when installed; no import here)."""
    cls = type(value)
    return cls.__name__ == "ndarray" and cls.__module__ == "numpy"


def is_numpy_number(value: object) -> bool:
    """Whether `value` is a numpy number or bool scalar (`np.float64(0.5)`, what `np.log(2.0)` or
    `a.sum()` gives): immutable, and equal to a constant of the same type and value."""
    cls = type(value)
    if cls.__module__ != "numpy":
        return False
    import numpy as np  # numpy is loaded: it made `value`

    return isinstance(value, (np.number, np.bool_))


def array_key(value: Any) -> Any:
    """What a speculation compares for an array: equal keys mean the same values for numpy code.
    Arrays of Python objects have no such key (their bytes are pointers): None."""
    if not is_ndarray(value):
        return ("not an array", type(value))
    if value.dtype.hasobject:
        return None
    return (value.dtype.str, value.shape, value.tobytes())


class KeyedCheck:
    """A speculation's check for a value that cannot be compared with `!=` itself: the key of what
    `check` returns (`array_key` for an array; data_values.bits_key for a NaN)."""

    __slots__ = ("check", "key")

    def __init__(self, check: Any, key: Any = array_key) -> None:
        self.check = check
        self.key = key

    def __call__(self, *values: Any) -> Any:
        return self.key(self.check(*values))


class ArrayWatch:
    """The arrays handed to the program that may share memory with tensors, with their keys."""

    def __init__(self) -> None:
        self.arrays: list[tuple[Any, Any]] = []

    def add(self, array: object, key: object) -> None:
        self.arrays.append((array, key))

    def changed(self) -> bool:
        """Whether the program wrote through one of the arrays (checked before each torch operation
        and at the end of the capture, so the graph never reads a tensor changed behind its back)."""
        return any(array_key(array) != key for array, key in self.arrays)

    def take_change(self) -> bool:
        """Whether an array changed (see `changed`); the arrays are then forgotten, so that the
        change is reported once."""
        if self.arrays and self.changed():
            self.arrays.clear()
            return True
        return False


def _is_buffer(value: object) -> bool:
    """A numpy array, `bytearray` or `array.array`: mutable memory a tensor can share."""
    return is_ndarray(value) or type(value) in _BUFFER_TYPES


def snapshot_constant(value: Any) -> Any:
    """What a graph keeps for a constant argument: an array or buffer as it is now. The graph runs
    with it on every call, but the program may change the object after the operation read it
    (`a[0] = 5` after `torch.as_tensor(a)`), and eager code's next call builds it anew."""
    if not _is_buffer(value):
        return value
    return value.copy(order="K") if is_ndarray(value) else copy.copy(value)


def shares_constant_memory(name: str, args: tuple) -> bool:
    """Whether the tensor `name(*args)` made shares memory with an array or buffer the graph keeps
    as a constant: the graph must hand out a copy, or a write to the tensor (`t.mul_(2)`, in the
    call or by its caller) would change the constant every later call starts from."""
    return name in _SHARING_CONSTRUCTORS and bool(args) and _is_buffer(args[0])
