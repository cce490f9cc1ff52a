"""Graphs that change an input in place while inputs share memory run uncompiled.

AOTAutograd compiles a graph for the memory layout of its example inputs, and when one input
changed in place shares memory with another it rebuilds them at run time from a common base
(`merge_view_inputs`). That path differs between torch versions: with torch 2.11 it raises "does not
yet handle non-differentiable view input mutations" when called with an argument that is a detached
view of a parameter the graph also reads, a crash eager code does not have. The entry's guards keep
such a memory layout apart from others, so only the entries captured on inputs that share memory and
change one of them run their graph as recorded, with the reason in explain(); the others compile.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
import torch.fx as fx

from jitlab.jit.entries.check_prefix import mutated
from jitlab.jit.graph.fresh_storage import storage_address


def aliased_mutation(gm: fx.GraphModule, example_inputs: list[Any]) -> str | None:
    """Why `gm` must not be compiled for these inputs (an input it changes in place shares memory
    with another input), or None."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    address = {
        node: storage_address(value)
        for node, value in zip(placeholders, example_inputs)
        if isinstance(value, torch.Tensor) and not isinstance(value, torch._subclasses.FakeTensor)
    }
    counts = Counter(a for a in address.values() if a)
    shared = {node for node, a in address.items() if a and counts[a] > 1}
    if not shared:
        return None
    for node in gm.graph.nodes:
        if node.op == "call_function" or node.op == "call_method":
            changed = [arg for arg in mutated(node) if arg in shared]
            if changed:
                return (
                    f"a graph of {len(gm.graph.nodes)} nodes runs uncompiled: it changes its input "
                    f"{changed[0].name} in place, which shares memory with another input, and compilers "
                    "do not keep such inputs apart on every torch version"
                )
    return None
