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

from typing import Any


def is_ndarray(value: Any) -> bool:
    """Whether `value` is a numpy array (numpy is imported by torch when installed; no import here)."""
    cls = type(value)
    return cls.__name__ == "ndarray" and cls.__module__ == "numpy"


def array_key(value: Any) -> Any:
    """What a speculation compares for an array: equal keys mean the same values for numpy code.
    Arrays of Python objects have no such key (their bytes are pointers): None."""
    if not is_ndarray(value):
        return ("not an array", type(value))
    if value.dtype.hasobject:
        return None
    return (value.dtype.str, value.shape, value.tobytes())


class KeyedCheck:
    """A speculation's check for an array result: the key of what `check` returns (see array_key)."""

    __slots__ = ("check",)

    def __init__(self, check: Any) -> None:
        self.check = check

    def __call__(self, *values: Any) -> Any:
        return array_key(self.check(*values))


class ArrayWatch:
    """The arrays handed to the program that may share memory with tensors, with their keys."""

    def __init__(self) -> None:
        self.arrays: list[tuple[Any, Any]] = []

    def add(self, array: Any, key: Any) -> None:
        self.arrays.append((array, key))

    def changed(self) -> bool:
        """Whether the program wrote through one of the arrays (checked before each torch operation
        and at the end of the capture, so the graph never reads a tensor changed behind its back)."""
        return any(array_key(array) != key for array, key in self.arrays)
