"""The sizes of a tensor whose shape depends on data, as Python reads them with the eager backend
(`GraphRecorder.lazy_shape`): each one a data-dependent int computed by a `size` or `numel` node of
the graph, so that the sizes stay graph values until Python code decides something with them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

from jitlab.jit.graph.data_values import DataInt

# recorder.lazy_int: (its value, the node computing it, what reading it activates) -> the int
LazyInt = Callable[[int, fx.Node, Any], DataInt]


def lazy_sizes(
    graph: fx.Graph,
    lazy_int: LazyInt,
    tensor: torch.Tensor,
    node: fx.Node,
    roots: frozenset[Any],
    name: str,
    args: tuple,
) -> DataInt | torch.Size | None:
    """`tensor.numel()`, `len(tensor)`, `tensor.shape`, `tensor.size()` or `tensor.size(dim)` (`name`
    and `args`) for `tensor`, recorded as `node`, whose shape depends on `roots`; None for another
    read."""
    if name == "numel" and not args:
        return lazy_int(tensor.numel(), graph.call_method("numel", (node,)), roots)
    if name == "__len__" and not args and tensor.dim() > 0:
        return lazy_int(len(tensor), graph.call_method("size", (node, 0)), roots)
    if name in ("shape", "size") and not args:
        return torch.Size(
            [lazy_int(n, graph.call_method("size", (node, i)), roots) for i, n in enumerate(tensor.shape)]
        )
    if name == "size" and args:
        dim = args[0]
        return lazy_int(tensor.size(dim), graph.call_method("size", (node, dim)), roots)
    return None
