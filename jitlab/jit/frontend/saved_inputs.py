"""Tensors a compiled part may save for its backward that the call changes in place before then.

Eager autograd saves what each operation needs: `(h + ema).abs()` saves the sum, a new tensor.
AOTAutograd's partitioner chooses for a compiled graph what to save: often its inputs, computing the
intermediates again in the backward. When the call changes such an input in place after the part and
before a backward pass runs the part's backward (a buffer's running average updated under `no_grad`
between two parts), autograd's version check raises "one of the variables needed for gradient
computation has been modified by an inplace operation": a crash eager code does not have (fuzz seed
105, program 1754). So such an input is handed to the part as a copy, which nothing changes; an
output of the part changed in place in that window (the partitioner may save it too) leaves the part
uncompiled, each operation saving what eager saves.

The window ends at the first backward pass that runs the part's backward without `retain_graph`:
autograd frees what the part saved, so a training step's optimizer update of the parameters costs no
copy. A change the caller makes after the call cannot be seen here (torch.compile shares that limit).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

import torch
import torch.fx as fx

from jitlab.jit.entries.check_prefix import memory_of, mutated, origin_of
from jitlab.jit.frontend.detached_inputs import requires_grad
from jitlab.jit.graph.training_nodes import BACKWARD_FUNCTIONS


def changed_before_backward(
    nodes: list[fx.Node], run: list[fx.Node], inputs: list[fx.Node], outputs: list[fx.Node]
) -> tuple[list[fx.Node], list[fx.Node]]:
    """Of a part's `inputs` and `outputs` (nodes of the graph whose nodes, in order, are `nodes`; the
    part is the run `run`), the tensors changed in place after the part and before a backward pass
    that frees what the part saved."""
    tensors_in = [a for a in inputs if isinstance(a.meta.get("example_value"), torch.Tensor)]
    tensors_out = [n for n in outputs if isinstance(n.meta.get("example_value"), torch.Tensor)]
    if not tensors_in and not tensors_out:
        return [], []
    reach = _grad_descendants(outputs)
    upstream = _grad_ancestors(inputs)
    found: dict[fx.Node, None] = {}  # in the order met
    by_address: dict[int, list[fx.Node]] = {}
    for candidate in tensors_in + tensors_out:
        by_address.setdefault(memory_of(candidate), []).append(candidate)
    by_address.pop(0, None)
    candidates = set(tensors_in + tensors_out)
    for node in nodes[nodes.index(run[-1]) + 1 :]:
        if _frees_part(node, reach, upstream):
            break
        for target in mutated(node):
            origin = origin_of(target)
            if origin in candidates:
                found[origin] = None
            for candidate in by_address.get(memory_of(target), ()):
                found[candidate] = None
    changed_in = [n for n in found if n in tensors_in]
    changed_out = [n for n in found if n in tensors_out]
    return changed_in, changed_out


def _requires_grad(node: fx.Node) -> bool:
    value = node.meta.get("example_value")
    return any(requires_grad(v) for v in (value if isinstance(value, (tuple, list)) else (value,)))


def _grad_descendants(starts: Iterable[fx.Node]) -> set[fx.Node]:
    """The nodes autograd connects to `starts`: those computed from them that require grad. Fewer
    than the truth is safe (a part is copied more often), more is not: only what requires grad."""
    return _grad_closure(starts, lambda node: node.users)


def _grad_ancestors(starts: Iterable[fx.Node]) -> set[fx.Node]:
    """The nodes `starts` are computed from through values that require grad, `starts` included."""
    return _grad_closure(starts, lambda node: node.all_input_nodes)


def _grad_closure(
    starts: Iterable[fx.Node], neighbours: Callable[[fx.Node], Iterable[fx.Node]]
) -> set[fx.Node]:
    """`starts` that require grad and what `neighbours` reaches from them through such nodes."""
    found: set[fx.Node] = set()
    pending = [n for n in starts if _requires_grad(n)]
    while pending:
        node = pending.pop()
        if node not in found:
            found.add(node)
            pending.extend(n for n in neighbours(node) if _requires_grad(n))
    return found


def _argument(node: fx.Node, position: int, name: str) -> object:
    if name in node.kwargs:
        return node.kwargs[name]
    return node.args[position] if len(node.args) > position else None


def _nodes_in(value: object) -> list[fx.Node]:
    if isinstance(value, fx.Node):
        return [value]
    if isinstance(value, (tuple, list)):
        return [n for v in value for n in _nodes_in(v)]
    return []


def _frees_part(node: fx.Node, reach: Collection[fx.Node], upstream: Collection[fx.Node]) -> bool:
    """Whether `node` is a backward pass that runs the part's backward and frees what it saved: its
    roots come from the part's results, it keeps no graph, and where it asks for the gradients of
    some tensors only (`inputs=`, `torch.autograd.grad`), one of them is one the part is computed from."""
    if node.op != "call_function" or not any(node.target is f for f in BACKWARD_FUNCTIONS):
        return False
    # positions of retain_graph and create_graph (which retain_graph follows when it is None)
    if node.target is torch.autograd.grad:
        roots, wanted, at = node.args[0], _argument(node, 1, "inputs"), 3
    elif node.target is torch.autograd.backward:
        roots, wanted, at = node.args[0], node.kwargs.get("inputs"), 2
    else:  # Tensor.backward(gradient, retain_graph, create_graph, inputs)
        roots, wanted, at = node.args[0], _argument(node, 4, "inputs"), 2
    retain = _argument(node, at, "retain_graph")
    if retain is None:
        retain = _argument(node, at + 1, "create_graph")
    if retain or not any(n in reach for n in _nodes_in(roots)):
        return False
    return wanted is None or any(n in upstream for n in _nodes_in(wanted))
