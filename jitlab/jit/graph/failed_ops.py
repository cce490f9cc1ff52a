"""A tensor operation that raised during the capture: did its tensors' metadata alone decide that?

A program may catch the exception of a tensor operation and go another way (vformer's PVT adds a
positional embedding and, when the shapes do not match, resizes it: `try: x = x + self.pos_embed
except: ...`). The capture cannot cache that in general: the failure may depend on tensor values
(an index out of range), which no guard sees. But when the same operation raises the same exception
on *meta* tensors (same shapes, strides, dtypes and requires_grad, no data), it raises for any data
of that metadata, which the guards and the graph already fix (the shapes of graph values follow from
the inputs' guarded ones): the path the program takes is the same on every call the entry serves.
Meta kernels word their errors differently ("Attempting to broadcast a dimension of length 8" for
"The size of tensor a (6) must match..."), so the exception type is compared, and an error of meta
itself (no meta kernel, data read on a meta tensor: their messages name "meta") decides nothing.
Symbolic sizes that reach such an operation are fixed (`use_shape`), as for a size Python reads.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch.utils._pytree import tree_map

from jitlab.jit.graph.torch_calls import tensors_in


class MetaRecorder(Protocol):
    """What deciding a failed operation on meta tensors uses of the graph recorder (recorder.py,
    which imports this module); tests/jit/test_jit_owned_state.py checks the real one."""

    dynamic_roots: dict[int, frozenset[Any]]

    def pause(self) -> contextlib.AbstractContextManager[None]: ...

    def use(self, value: object) -> None: ...

    def use_shape(self, tensor: object) -> None: ...


def _on_meta(value: object) -> object:
    if type(value) is not torch.Tensor and type(value) is not torch.nn.Parameter:
        return value
    meta = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    return meta.requires_grad_(value.requires_grad) if value.requires_grad else meta


def fails_on_metadata(
    recorder: MetaRecorder, func: Callable[..., Any], args: tuple, kwargs: dict, error: Exception
) -> bool:
    """Whether `func(*args, **kwargs)`, which raised `error`, raises the same on meta tensors; the
    shapes of its tensors are then fixed for the capture."""
    tensors = tensors_in((args, kwargs))
    if not tensors or any(type(t) not in (torch.Tensor, torch.nn.Parameter) for t in tensors):
        return False  # tensor subclasses: their own rules; no tensor: nothing for meta to say
    try:
        meta_args, meta_kwargs = tree_map(_on_meta, (args, kwargs))
    except Exception:  # noqa: BLE001 - no meta copy (a sparse or quantized tensor): not decided here
        return False
    with recorder.pause():
        try:
            func(*meta_args, **meta_kwargs)
        except Exception as meta_error:  # noqa: BLE001 - compared with the real one below
            # a failure of meta itself (no meta kernel, data read on meta) names it: not decided here
            same = type(meta_error) is type(error) and "meta" not in str(meta_error).lower()
        else:
            same = False
    if same:
        # the numbers among the arguments decided it too: one read from tensor data and kept in the
        # graph (`x.view(int(n.sum()), -1)`) is re-checked from now on, like a number Python reads
        recorder.use((args, kwargs))
        if recorder.dynamic_roots:
            for tensor in tensors:
                recorder.use_shape(tensor)
    return same
