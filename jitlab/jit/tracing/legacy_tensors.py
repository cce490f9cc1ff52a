"""Lookasides for the legacy tensor constructors: `torch.Tensor(4, 4)`, `torch.FloatTensor(x.size())`,
`torch.LongTensor([1, 2])`.

Crawled models build constants and buffers this way, e.g. a GAN loss's target labels:
`self.Tensor(input.size()).fill_(1.0)`. The constructors are C types that do not reach torch's
function mode, so the tensor they make would have no origin the recorder knows, and the call would
fall back. Here each one is done by the factory function it stands for, which the recorder records:
sizes (ints, or one `torch.Size`) give `torch.empty(sizes, dtype=...)`, uninitialised memory as
the constructor gives; nested lists or tuples of numbers give `torch.tensor(data, dtype=...)`; a
numpy array (`torch.FloatTensor(kernel)`, a Gaussian kernel built with numpy) gives
`torch.as_tensor(array, dtype=...)`, which shares the array's memory when the dtypes match, as the
constructor does, and is an array made in the call like `torch.from_numpy`'s (numpy_tensors.py).
Any other form (a tensor, a storage, keyword arguments) runs natively, as before.

`torch.autograd.Variable(t)` (without `requires_grad=True`) is `t.detach()`: a tensor sharing t's
data, outside autograd.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.autograd import Variable

from jitlab.jit.graph.numpy_values import is_numpy_number
from jitlab.jit.tracing.lookasides import Lookasides, register_lookaside
from jitlab.jit.tracing.numpy_tensors import accepted_array

#: the legacy CPU tensor types and the dtype each makes (`torch.Tensor`: the default dtype)
LEGACY_TYPES: dict[Any, torch.dtype | None] = {
    torch.Tensor: None,
    torch.FloatTensor: torch.float32,
    torch.DoubleTensor: torch.float64,
    torch.HalfTensor: torch.float16,
    torch.BFloat16Tensor: torch.bfloat16,
    torch.LongTensor: torch.int64,
    torch.IntTensor: torch.int32,
    torch.ShortTensor: torch.int16,
    torch.CharTensor: torch.int8,
    torch.ByteTensor: torch.uint8,
    torch.BoolTensor: torch.bool,
}


def _is_number_data(value: object, depth: int = 0) -> bool:
    """Nested lists/tuples of Python numbers or NumPy number scalars (not a torch.Size, which means
    sizes): benchmark_VAE's `torch.Tensor([np.exp(...) for x in range(n)])`, whose items are
    `np.float64`s, which `torch.tensor` reads as the constructor does."""
    if type(value) in (bool, int, float) or (is_numpy_number(value) and value.dtype.kind in "biuf"):
        return True
    if type(value) in (list, tuple) and depth < 8:
        return all(_is_number_data(v, depth + 1) for v in value)
    return False


def legacy_call(dtype: torch.dtype | None, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
    """The factory call that does `LegacyType(*args)`, or None for forms left native."""
    if kwargs:
        return None
    made = dtype or torch.get_default_dtype()
    if not args:
        return lambda: torch.empty(0, dtype=made)
    if all(type(a) is int for a in args):
        return lambda: torch.empty(args, dtype=made)
    if len(args) == 1 and type(args[0]) is torch.Size:
        return lambda: torch.empty(args[0], dtype=made)
    if len(args) == 1 and type(args[0]) in (list, tuple) and _is_number_data(args[0]):
        return lambda: torch.tensor(args[0], dtype=made)
    if len(args) == 1 and type(args[0]) is range:  # `torch.LongTensor(range(n))`
        r = args[0]
        return lambda: torch.arange(r.start, r.stop, r.step, dtype=made)
    if len(args) == 1 and accepted_array(args[0]) and args[0].ndim >= 1:
        # an array: shared when its dtype is the type's (as the constructor shares it), else converted
        return lambda: torch.as_tensor(args[0], dtype=made)
    return None


def variable_call(args: tuple, kwargs: dict) -> Callable[[], Any] | None:
    """The call that does `Variable(*args, **kwargs)`, or None for forms left native."""
    extra = {k: v for k, v in kwargs.items() if k != "volatile"}
    data = args[0] if len(args) == 1 else extra.pop("data", None) if not args else None
    if not isinstance(data, torch.Tensor) or extra.pop("requires_grad", False) is not False or extra:
        return None
    return data.detach


def _register() -> None:
    register_lookaside(Variable, lambda lookasides, args, kwargs: variable_call(args, kwargs))
    for legacy, dtype in LEGACY_TYPES.items():

        def impl(lookasides: Lookasides, args: tuple, kwargs: dict, dtype: torch.dtype | None = dtype) -> Any:
            return legacy_call(dtype, args, kwargs)

        register_lookaside(legacy, impl)


_register()
