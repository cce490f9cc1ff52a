"""`torch.from_numpy(a)` called by interpreted code, recorded as `torch.as_tensor(a)`.

`torch.from_numpy` is no torch function a `TorchFunctionMode` sees: its tensor reached the graph as
one of unknown origin, and the call ran eagerly for good (PointNet's `torch.from_numpy(np.eye(k)
...)` is in many ParityBench programs). For the arrays it accepts, `torch.as_tensor(a)` makes the
same tensor (same dtype and strides, sharing the array's memory), and the recorder sees it: the
array becomes a constant of the graph, copied when read, and the graph hands out a copy of it on
every call (numpy_values.snapshot_constant, shares_constant_memory). An array read from tensor data
(`t.numpy()`) is re-checked by its bytes like every such read, so the constant is right whenever
the entry runs. Arrays `from_numpy` refuses (other dtypes, negative or odd strides, non-native byte
order, subclasses) go to `from_numpy` itself, which raises as in eager code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from jitlab.jit.graph.numpy_values import is_ndarray
from jitlab.jit.tracing.lookasides import Lookasides, register_lookaside

#: the dtypes torch.from_numpy takes (numpy's long double and others raise)
_DTYPES = frozenset(
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 complex64 complex128".split()
)


def accepted_array(array: object) -> bool:
    """An array `torch.from_numpy` takes: a numpy ndarray of a native dtype it knows, with
    non-negative strides that are multiples of the item size."""
    if not is_ndarray(array) or type(array).__module__ != "numpy":
        return False
    dtype = array.dtype
    if dtype.name not in _DTYPES or not dtype.isnative:
        return False
    return all(s >= 0 and s % dtype.itemsize == 0 for s in array.strides)


def _from_numpy(lookasides: Lookasides, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
    if len(args) != 1 or kwargs or not accepted_array(args[0]):
        return None
    array = args[0]
    return lambda: torch.as_tensor(array)


register_lookaside(torch.from_numpy, _from_numpy)
