"""The symbolic sizes of a graph's inputs handed to the compiler as inputs of their own, as TorchDynamo
hands them over (`s0: Sym(s0)` placeholders before the tensors).

Inductor's passes rebuild the sizes a compiled graph uses from the graph's inputs: a float computed
from a size (`2.0 / x.numel()` in the backward of `mse_loss`, which AOTAutograd traces into the
graph of a training forward) is turned into tensor arithmetic on the symbol `s0`, which must be a
graph input (`tensorify_python_scalars`: `KeyError: s0` otherwise, and every symbolic training
forward with a mean-reduced loss ran uncompiled). Each call then passes the sizes read from its
tensors (`x.size(0)`), which the entry's guards have checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

if TYPE_CHECKING:  # torch loads it lazily
    from torch.fx.experimental.symbolic_shapes import ShapeEnv


def with_size_inputs(
    gm: fx.GraphModule, fakes: list[Any], shape_env: ShapeEnv
) -> tuple[fx.GraphModule, list[Any], Callable[[Callable[..., Any]], Callable[..., Any]]]:
    """`gm` with one placeholder more, first, for each symbol a fake input's size is (a dimension
    still symbolic), the fakes with those SymInts before them, and the wrapper that makes the
    compiled callable take the original inputs (reading each size from the input it belongs to).
    Unchanged when no input has a symbolic size."""
    sources: list[tuple[int, int]] = []
    symbols: list[Any] = []
    seen: set[Any] = set()
    for value in fakes:  # a symbol handed over as a SymInt input already is one the compiler knows
        if isinstance(value, torch.SymInt):
            seen.add(shape_env.replace(value.node.expr))
    for i, value in enumerate(fakes):
        if not isinstance(value, torch.Tensor):
            continue
        for d, size in enumerate(value.shape):
            if not isinstance(size, torch.SymInt):
                continue
            expr = shape_env.replace(size.node.expr)
            if expr.is_Symbol and expr not in seen:
                seen.add(expr)
                sources.append((i, d))
                symbols.append(size)
    if not sources:
        return gm, list(fakes), lambda compiled: compiled
    graph = fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    first = next(iter(graph.nodes))
    with graph.inserting_before(first):
        for k, size in enumerate(symbols):
            node = graph.placeholder(f"size_{k}")
            node.meta["val"] = size
            node.meta["example_value"] = size
    lifted = fx.GraphModule(gm, graph)

    def wrap(compiled: Callable[..., Any]) -> Callable[..., Any]:
        def call(*inputs: Any) -> Any:
            return compiled(*[inputs[i].size(d) for i, d in sources], *inputs)

        return call

    return lifted, [*symbols, *fakes], wrap
