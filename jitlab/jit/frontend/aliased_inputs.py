"""Graphs that change an input in place while inputs share memory run uncompiled.

AOTAutograd compiles a graph for the memory layout of its example inputs, and when one input
changed in place shares memory with another it rebuilds them at run time from a common base
(`merge_view_inputs`). That path differs between torch versions: with torch 2.11 it raises "does not
yet handle non-differentiable view input mutations" when called with an argument that is a detached
view of a parameter the graph also reads, a crash eager code does not have. The entry's guards keep
such a memory layout apart from others (entries/input_memory.py), so only the entries captured on
inputs that share memory and change one of them run their graph as recorded, with the reason in
explain(); the others compile.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
import torch.fx as fx

from jitlab.jit.entries.input_memory import changed_inputs
from jitlab.jit.graph.fresh_storage import storage_address


def aliased_mutation(gm: fx.GraphModule, example_inputs: list[Any]) -> str | None:
    """Why `gm` must not be compiled for these inputs (an input it changes in place, directly or
    through a view, shares memory with another input), or None."""
    addresses = [storage_address(v) if isinstance(v, torch.Tensor) else 0 for v in example_inputs]
    counts = Counter(a for a in addresses if a)
    if all(n == 1 for n in counts.values()):
        return None  # the usual case: no two inputs share memory
    changed = changed_inputs(gm.graph)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, address in zip(placeholders, addresses):
        if node in changed and counts[address] > 1:
            return (
                f"a graph of {len(gm.graph.nodes)} nodes runs uncompiled: it changes its input {node.name} "
                "in place, which shares memory with another input, and compilers do not keep such "
                "inputs apart on every torch version"
            )
    return None
