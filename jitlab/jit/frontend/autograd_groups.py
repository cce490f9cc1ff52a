"""Results of one graph that eager code keeps in separate autograd graphs.

AOTAutograd makes one autograd node of a compiled graph. Two results that require grad but share no
operation that requires grad (a loss computed from `h.detach()`, and `h` itself, in the graph that
runs before a `loss.backward()` the program breaks at) are separate autograd graphs in eager code: a
backward pass from one never runs the other's backward. Compiled as one node, the backward of the
first runs the node's backward and frees what it saved, and a later backward from the second raised
"Trying to backward through the graph a second time" where eager did not (fuzz seed 103, program
37: a backward pass inside the call and a training step on the call's result). Such a graph runs
uncompiled, each operation its own node, with the reason in `explain()`, as a training step's part
does (host_split.py). Results that do share an operation are one autograd graph in eager code as
well, and stay one compiled graph.
"""

from __future__ import annotations

import torch
import torch.fx as fx


def separate_gradient_results(gm: fx.GraphModule) -> list[str]:
    """The names of the graph's results that require grad, when they fall into more than one group
    sharing no operation that requires grad (inputs and attributes do not join groups: a parameter
    or an earlier graph's value read by both is an edge of each, as in eager code); else []."""
    requires: dict[fx.Node, bool] = {}
    parent: dict[fx.Node, fx.Node] = {}

    def root(node: fx.Node) -> fx.Node:
        while parent[node] is not node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    outputs: list[fx.Node] = []
    for node in gm.graph.nodes:
        if node.op == "output":
            fx.node.map_arg(node.args, outputs.append)
            continue
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor):
            requires[node] = value.requires_grad
        else:
            requires[node] = node.op != "placeholder" and any(
                requires.get(a, False) for a in node.all_input_nodes
            )
        if not requires[node] or node.op in ("placeholder", "get_attr"):
            continue
        parent[node] = node
        for arg in node.all_input_nodes:
            if arg in parent:
                parent[root(arg)] = root(node)
    results = list(dict.fromkeys(n for n in outputs if n in parent))
    groups = {root(n) for n in results}
    return [n.name for n in results] if len(groups) > 1 else []
