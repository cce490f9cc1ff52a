"""A compiled graph's tensor outputs laid out as eager laid them out.

A compiler may give an output other strides than eager does, with the same values. Inductor does
for `torch.cat([torch.tensor([]), k], dim=-2)` of a transposed `k` (what transformers' `DynamicLayer`
does on its first update): eager's CPU kernel returns a contiguous tensor, Inductor drops the empty
input and keeps `k`'s transposed strides (so does `torch.compile`). Strides are visible to the
program: `.view()` refuses a non-contiguous tensor where eager's would pass, and the entries that
read such an output on the next call guard its layout. In `generate`, the call that captured the
prefill returned eager's contiguous cache, the decode entries were captured on it, and every
compiled prefill after that gave a transposed cache the decode entries missed on: 8 captures (the
cache limit) with Inductor, where the eager backend took 4.

So an output that eager returned contiguous in the captured call, with exactly the strides a
contiguous tensor of its sizes has (a tensor eager allocated, not a view that happens to be
contiguous because of dimensions of size 1), is made contiguous again when the compiled graph
returns it otherwise. That copies only where the compiler chose another layout, and never an output
that shares memory with an input or another output (a view whose aliasing the program may rely on).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx as fx


def keep_eager_layout(gm: fx.GraphModule, compiled: Callable[..., Any]) -> Callable[..., Any]:
    """`compiled`, returning eager's contiguous layout for the outputs eager allocated contiguous
    (`compiled` itself when there are none)."""
    positions = allocated_contiguous_outputs(gm)
    if not positions:
        return compiled

    def run(*args: object) -> Any:
        result = compiled(*args)
        # on the hot path of every hit: one is_contiguous() per such output, nothing built
        if isinstance(result, (tuple, list)) and len(result) > positions[-1]:
            for i in positions:
                output = result[i]
                if isinstance(output, torch.Tensor) and not output.is_contiguous():
                    return _relaid(result, positions, args)
        return result

    return run


def allocated_contiguous_outputs(gm: fx.GraphModule) -> list[int]:
    """Positions of the graph's outputs whose eager value (the captured call's) had exactly the
    strides of a contiguous tensor of its sizes."""
    output = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    if output is None or not isinstance(output.args[0], (tuple, list)):
        return []
    positions = []
    for i, node in enumerate(output.args[0]):
        value = node.meta.get("example_value") if isinstance(node, fx.Node) else None
        if isinstance(value, torch.Tensor) and value.layout == torch.strided and _canonical(value):
            positions.append(i)
    return positions


def _canonical(tensor: torch.Tensor) -> bool:
    """Strides exactly those `torch.empty` gives its sizes (size-1 dimensions included)."""
    if tensor.is_nested or tensor.dim() < 2 or tensor.numel() < 2:
        return False  # every layout of these reads alike
    expected, step = [], 1
    for size in reversed(tensor.shape):
        expected.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(expected)) == tuple(tensor.stride())


def _relaid(result: Sequence[Any], positions: list[int], args: tuple[Any, ...]) -> Any:
    """`result` with the outputs at `positions` that came back non-contiguous made contiguous, except
    those sharing memory with an input or another output."""
    shared = _storages([a for a in args if isinstance(a, torch.Tensor)])
    outputs = list(result)
    for i in positions:
        if not isinstance(outputs[i], torch.Tensor) or outputs[i].is_contiguous():
            continue
        others = _storages([o for k, o in enumerate(outputs) if k != i and isinstance(o, torch.Tensor)])
        if _storage(outputs[i]) in shared or _storage(outputs[i]) in others:
            continue
        outputs[i] = outputs[i].contiguous()
    if type(result) is tuple:
        return tuple(outputs)
    return type(result)(*outputs) if isinstance(result, tuple) else outputs  # a named tuple


def _storages(tensors: Sequence[torch.Tensor]) -> set[int]:
    return {_storage(t) for t in tensors}


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()
