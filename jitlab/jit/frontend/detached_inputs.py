"""Inputs a compiled graph only detaches, handed to the compiler and to every call detached.

AOTAutograd ties every input that requires grad to the one autograd node it makes of a graph. An
input the graph only reads as `x.detach()` (a loss the program already ran backward on, read as
`loss.detach() * 0.1`) is then an edge of that node although eager code cut it: a later backward
pass through the graph's output walks into the input's own graph, which raised "Trying to backward
through the graph a second time" where eager did not (fuzz seed 15, program 414), and a graph part
that made the input got a zero gradient where eager leaves None (fuzz seed 45, programs 65 and 287).
Handed over detached, the input is no edge, as in eager code; `detach()` of a detached tensor is the
tensor's data, so the graph computes the same values.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, cast

import torch
import torch.fx as fx


def only_detached(node: fx.Node, inside: Collection[fx.Node] | None = None) -> bool:
    """Whether every use of `node` (within `inside`, a part's nodes, when given) is `node.detach()`."""
    uses = [u for u in node.users if inside is None or u in inside]
    return bool(uses) and all(
        (
            u.op == "call_method"
            and u.target == "detach"
            or u.op == "call_function"
            and u.target is torch.detach
        )
        and len(u.args) == 1
        and not u.kwargs
        for u in uses
    )


def requires_grad(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.requires_grad


def detached_positions(gm: fx.GraphModule, example_inputs: Sequence[object]) -> list[bool]:
    """For each placeholder of `gm`: whether its input requires grad and the graph only detaches it."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return [False] * len(example_inputs)
    return [requires_grad(v) and only_detached(n) for n, v in zip(placeholders, example_inputs)]


def detach_each(values: Sequence[Any] | None, detached: Sequence[bool]) -> list[Any] | None:
    """`values` (real or fake tensors and numbers) with those at the `detached` positions detached."""
    if values is None:
        return None
    return [v.detach() if d else v for v, d in zip(values, detached, strict=True)]


def with_detached_inputs(compiled: Callable[..., Any], detached: Sequence[bool]) -> Callable[..., Any]:
    """`compiled`, called with the inputs at the `detached` positions detached."""
    positions = [i for i, d in enumerate(detached) if d]

    def call(*inputs: object) -> object:
        given = list(inputs)
        for i in positions:
            # a tensor requiring grad: the entry's guards checked it before the call
            given[i] = cast(torch.Tensor, given[i]).detach()
        return compiled(*given)

    return call
