"""Checking data-dependent speculations *before* a graph that mutates tensors runs.

A speculation (a Python decision on tensor data, see jitlab.jit.graph.recorder) is normally re-checked after the
graph ran; if it fails, the call is captured again, which runs the program a second time. That is
only harmless when the graph changed nothing: a graph that mutates tensors (BatchNorm running
statistics in training mode, `x.add_(1)`, an EMA buffer) would have done its update twice.

The same holds for a graph that draws random numbers (a second run would draw other numbers and
leave the generator elsewhere than eager code). So for such graphs the entry first runs a *check prefix*: the part of the graph the speculated
values depend on, on the same inputs except that every input the prefix would mutate is replaced by
a copy. If a speculated value differs, the call is a miss and nothing was changed; otherwise the
whole graph runs. The prefix computes the same values the graph computes (same operations on the
same values), so the main graph's speculations hold too. A prefix that draws random numbers cannot
be run twice without changing the random stream, so such captures are still not cached.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn

from jitlab.jit.errors import Unsupported
from jitlab.jit.graph.autocast_nodes import is_autocast_node
from jitlab.jit.graph.autograd_functions import apply_function
from jitlab.jit.graph.data_values import Speculation
from jitlab.jit.graph.fresh_storage import storage_address
from jitlab.jit.graph.tensor_writes import set_data
from jitlab.jit.graph.torch_calls import RANDOM, is_inplace, node_op_name
from jitlab.jit.graph.training_nodes import is_host_training_op
from jitlab.jit.reasons import ReasonKind

# operations that return a view of their first argument (mutating the view mutates the base)
_VIEWS = {
    "view", "view_as", "reshape", "reshape_as", "transpose", "permute", "t", "T", "mT", "H", "mH",
    "expand", "expand_as", "select", "narrow", "squeeze", "unsqueeze", "flatten", "unflatten",
    "unfold", "diagonal", "as_strided", "detach", "data", "__getitem__", "getitem", "split", "chunk",
    "unbind", "movedim", "swapaxes", "swapdims", "real", "imag", "view_as_real", "view_as_complex",
    "split_with_sizes", "tensor_split", "hsplit", "vsplit", "dsplit", "indices", "values", "alias",
}  # fmt: skip
_NORMS = {"batch_norm", "instance_norm"}


@dataclass
class CheckPrefix:
    """The prefix graph and how to call it: one (placeholder index, copy it?) per prefix input, and
    for each speculation the positions of its tensors among the prefix outputs."""

    gm: fx.GraphModule
    inputs: list[tuple[int, bool]]
    spec_outputs: list[list[int]]


def _tensor_args(values: Iterable[Any]) -> list[fx.Node]:
    out: list[fx.Node] = []
    for value in values:
        if isinstance(value, fx.Node):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(_tensor_args(value))
        elif isinstance(value, dict):
            out.extend(_tensor_args(value.values()))
    return out


def mutated(node: fx.Node) -> list[fx.Node]:
    """The argument nodes `node` may change in place."""
    name = node_op_name(node)
    if node.target is set_data:
        return [node.args[0]]  # type: ignore[list-item]
    if node.target is apply_function:
        return _tensor_args(node.args[1:]) + _tensor_args(node.kwargs.values())  # a Function may mark_dirty
    out: list[fx.Node] = []
    if "out" in node.kwargs:
        out.extend(_tensor_args([node.kwargs["out"]]))
    if name in _NORMS:
        out.extend(_norm_statistics(node))
    elif is_inplace(name) or name == "__setitem__" or node.target is operator.setitem:
        out.extend(_tensor_args(node.args[:1]))
    return out


# torch.nn.functional's norms: (flag that makes them update their running statistics, its default)
_FUNCTIONAL_NORMS = {
    torch.nn.functional.batch_norm: ("training", False),
    torch.nn.functional.instance_norm: ("use_input_stats", True),
}


def _norm_statistics(node: fx.Node) -> list[fx.Node]:
    """The tensors a batch or instance norm may update: its running statistics, and only when the
    call asks for it. `F.batch_norm(x, mean, var, training=False)` (every BatchNorm in eval mode)
    writes nothing; counted as changing its buffers, it made every BatchNorm model's entry check
    which inputs share memory, in Python, on every call (about 45 µs on timm's regnety_002). Other
    callables of that name (`torch.batch_norm`, whose arguments come in another order) keep the
    cautious answer: every tensor argument after the input."""
    known = _FUNCTIONAL_NORMS.get(node.target)  # type: ignore[arg-type]
    if known is None:
        return _tensor_args(node.args[1:]) + _tensor_args(v for k, v in node.kwargs.items() if "running" in k)
    flag, default = known
    updates = node.kwargs[flag] if flag in node.kwargs else node.args[5] if len(node.args) > 5 else default
    if updates is False:
        return []
    statistics = list(node.args[1:3]) + [node.kwargs.get(k) for k in ("running_mean", "running_var")]
    return _tensor_args(statistics)


def origin_of(node: fx.Node) -> fx.Node:
    """The node whose tensor `node` is, or is a view of: a graph input or a computing operation."""
    for _ in range(64):
        first = node.args[0] if node.args else None
        if not isinstance(first, fx.Node):
            return node
        if node.op == "call_function" and node.target is operator.getitem:
            node = first  # an item of a multi-output op: its producer decides
        elif node_op_name(node) in _VIEWS or is_inplace(node_op_name(node)) or node.target is set_data:
            node = first
        else:
            return node
    return node


def _draws_random(node: fx.Node) -> bool:
    name = node_op_name(node)
    if name.startswith("python_random_draw"):
        return True
    if name not in RANDOM:
        return False
    if "dropout" in name:  # F.dropout(x, p, training, inplace): no draw when not training
        training = node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True)
        return training is not False
    return True


def _inputs_closure(nodes: Iterable[fx.Node], needed: set[fx.Node]) -> None:
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if node not in needed:
            needed.add(node)
            pending.extend(node.all_input_nodes)


def build_check_prefix(
    graph: fx.Graph, root: nn.Module, placeholders: list[fx.Node], specs: list[Speculation]
) -> CheckPrefix | None:
    """The check prefix for `specs` (Speculation objects over nodes of `graph`), or None when the
    values they need come from random operations."""
    needed: set[fx.Node] = set()
    _inputs_closure((node for spec in specs for node in spec.nodes), needed)
    order = {node: k for k, node in enumerate(graph.nodes)}
    last = max((order[n] for spec in specs for n in spec.nodes), default=len(order))
    changed = True
    while changed:
        # in-place changes of what the speculations read: directly, through views, or through any
        # operation that gave the same memory back (`x.contiguous()` of a contiguous `x`); those
        # after the last value read cannot change it (an optimizer's update after a loss read)
        changed = False
        memory = {memory_of(n) for n in needed} - {0}
        for node in graph.nodes:
            if order[node] >= last:
                break
            if node not in needed and any(
                origin_of(m) in needed or memory_of(m) in memory for m in mutated(node)
            ):
                _inputs_closure([node], needed)
                memory.update(memory_of(n) for n in needed)
                changed = True
    # the values are computed under the autocast regions the graph enters, as eager code computed
    # them: without the regions the prefix would compute in float32 what eager code computed in
    # bfloat16, and a check could pass where eager code took the other path (graph/autocast_nodes.py)
    needed.update(n for n in graph.nodes if is_autocast_node(n) and order[n] < last)
    needed.update(n for n in graph.nodes if is_autocast_node(n) and n.args and n.args[0] in needed)
    changed_memory = {memory_of(m) for node in needed for m in mutated(node)} - {0}
    copies = {
        origin
        for node in graph.nodes
        if node in needed
        for origin in map(origin_of, mutated(node))
        if origin.op == "placeholder"
    } | {node for node in placeholders if node in needed and memory_of(node) in changed_memory}
    _refuse_shared_memory(graph, needed)
    prefix = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    inputs: list[tuple[int, bool]] = []
    for node in graph.nodes:
        if node not in needed:
            continue
        if _draws_random(node) or is_host_training_op(node):
            return None  # a value of random draws, or of a backward pass: a data break instead
        if node.op == "placeholder":
            env[node] = prefix.placeholder(node.name)
            inputs.append((placeholders.index(node), node in copies))
        else:
            env[node] = prefix.node_copy(node, lambda n: env[n])
    spec_nodes: list[fx.Node] = []
    spec_outputs: list[list[int]] = []
    for spec in specs:
        positions = []
        for node in spec.nodes:
            if node not in spec_nodes:
                spec_nodes.append(node)
            positions.append(spec_nodes.index(node))
        spec_outputs.append(positions)
    prefix.output(tuple(env[n] for n in spec_nodes))
    return CheckPrefix(fx.GraphModule(root, prefix), inputs, spec_outputs)


def memory_of(node: fx.Node) -> int:
    """The address of the memory of the tensor `node` gave during the capture (0 for none): an
    input's as it was before the call (recorder.add_input), another node's as it is now."""
    if node.op == "placeholder" and node.meta.get("storage"):
        return node.meta["storage"]
    value = node.meta.get("example_value")
    return storage_address(value) if isinstance(value, torch.Tensor) else 0


def changed_memory(graph: fx.Graph) -> set[int]:
    """The memory the graph's operations change in place, as it was during the capture."""
    return {memory_of(target) for node in graph.nodes for target in mutated(node)} - {0}


def _refuse_shared_memory(graph: fx.Graph, needed: set[fx.Node]) -> None:
    """Raise Unsupported when an input the prefix reads shares memory with another input and the
    graph changes that memory in place (a global `B = A[:]`, then `A.mul_(-1)` and `if B.sum() > 0:`):
    the prefix would read it unchanged, or change a copy of one and not the other. The capture's
    memory is what a hit sees: the entry guards it (input_memory.py)."""
    changed = changed_memory(graph)
    inputs = [node for node in graph.nodes if node.op == "placeholder"]
    for node in needed:
        address = memory_of(node) if node.op == "placeholder" else 0
        if address in changed and any(other is not node and memory_of(other) == address for other in inputs):
            raise Unsupported(
                "a value read from tensor data decides the program and is read from a tensor that shares "
                "memory with another input the graph changes in place (it cannot be checked before the "
                "graph runs)",
                ReasonKind.DATA_DEPENDENT,
            )


def copy_input(tensor: torch.Tensor) -> torch.Tensor:
    """An independent copy of an input the prefix would mutate."""
    return tensor.detach().clone()
