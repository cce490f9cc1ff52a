"""Tensor operations whose Python-number argument is a 0-d tensor, rewritten with the tensor as an
operand: torch.optim's path for compilers (`torch.compiler.is_compiling()` answered True) keeps its
step sizes as 0-d tensors and hands them to in-place methods that take a number
(`param.addcdiv_(exp_avg, denom, value=-step_size)`). ATen reads such a number with `.item()`,
which neither a compiler nor the run on fake tensors with symbolic sizes can do (the fake run meets
an unbacked float and fails, which kept a training step's sizes static). TorchDynamo decomposes
them the same way; the values are the same up to rounding, as under torch.compile.
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

from jitlab.jit.graph.data_values import DATA_INT

#: in-place methods whose Python-number argument torch.optim gives as a 0-d tensor on the path it keeps
#: for compilers (`param.addcdiv_(exp_avg, denom, value=-step_size)`): ATen would read it with
#: `.item()`, which a compiler cannot trace. They are rewritten with the tensor as an operand, as
#: TorchDynamo decomposes them (the value is the same up to rounding, as under torch.compile).
_SCALAR_ARG = {"addcdiv_": "value", "addcmul_": "value", "add_": "alpha", "sub_": "alpha"}


_FOREACH_SCALARS = {torch._foreach_addcdiv_: torch._foreach_div, torch._foreach_addcmul_: torch._foreach_mul}


def without_tensor_scalars(graph: fx.Graph) -> dict[str, fx.Node]:
    """Rewrite `graph` in place; returns the node replacing each rewritten one, by the old name (the
    run on fake tensors, graph/shapes.py, names its values by the names of the graph it is given)."""
    renamed: dict[str, fx.Node] = {}
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in _FOREACH_SCALARS and len(node.args) == 4:
            new = _foreach_without_tensor_scalars(graph, node)
            if new is not None:
                renamed[node.name] = new
            continue
        key = _SCALAR_ARG.get(node.target) if node.op == "call_method" else None
        if key is None or not isinstance(node.kwargs.get(key), fx.Node):
            continue
        meta = node.kwargs[key].meta
        if type(meta.get("example_value", meta.get(DATA_INT))) in (float, int):
            # a Python number (a learning rate that is a graph input, or computed from an int read from
            # tensor data, compiled_ints.py): ATen takes it as it is
            continue
        scale, rest = node.kwargs[key], {k: v for k, v in node.kwargs.items() if k != key}
        self_, *operands = node.args
        with graph.inserting_before(node):
            if node.target == "addcdiv_":
                term = graph.call_function(torch.div, tuple(operands))
                new = graph.call_method("addcmul_", (self_, term, scale), rest)
            elif node.target == "addcmul_":
                term = graph.call_function(torch.mul, tuple(operands))
                new = graph.call_method("addcmul_", (self_, term, scale), rest)
            else:
                term = graph.call_function(torch.mul, (operands[0], scale))
                new = graph.call_method(node.target, (self_, term), rest)
        renamed[node.name] = new
        node.replace_all_uses_with(new)
        graph.erase_node(node)
    return renamed


def _foreach_without_tensor_scalars(graph: fx.Graph, node: fx.Node) -> fx.Node | None:
    """`torch._foreach_addcdiv_(xs, as_, bs, scalars)` with the scalars in a tensor (torch.optim's
    foreach Adam under a compiler): `xs += (as_ / bs) * scalars[i]`, in foreach operations."""
    xs, first, second, scalars = node.args
    if not isinstance(scalars, fx.Node) or not isinstance(xs, (list, tuple)):
        return None
    with graph.inserting_before(node):
        term = graph.call_function(_FOREACH_SCALARS[node.target], (first, second))
        rows = graph.call_function(torch.unbind, (scalars,))
        items = [graph.call_function(operator.getitem, (rows, i)) for i in range(len(xs))]
        scaled = graph.call_function(torch._foreach_mul, (term, items))
        new = graph.call_function(torch._foreach_add_, (xs, scaled))
    node.replace_all_uses_with(new)
    graph.erase_node(node)
    return new
