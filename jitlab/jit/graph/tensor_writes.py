"""Writes to attributes of tensors that existed before the call.

`param.data = new` swaps the tensor's data in place (weight clipping, re-initialisation, EMA copies in
real code). It is recorded as one graph operation, `set_data(param, new)`, whose result stands for
`param` in the rest of the graph: with the graph's inputs being the very parameters read from the
module, running the graph does the swap on every call as eager code does.

Other tensor attributes (`requires_grad`, `grad`, `names`, user attributes stored on a tensor) are
not replayed: a capture that writes them is not cached.
"""

from __future__ import annotations

import torch

from jitlab.jit.graph.recorder import GraphRecorder


def set_data(target: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """`target.data = value`, as a graph operation that returns `target`."""
    target.data = value
    return target


def record_set_data(recorder: GraphRecorder, target: torch.Tensor, value: torch.Tensor) -> None:
    """Do `target.data = value` during a capture and record it in the graph."""
    target_node = recorder.node_for(target)
    value_node = recorder.node_for(value)
    recorder.sync_grad_mode()
    with recorder.pause():
        target.data = value
    node = recorder.graph.call_function(set_data, (target_node, value_node))
    node.meta["example_value"] = target
    recorder.node_of[id(target)] = (target, node)
    roots = recorder.dynamic_roots.get(id(value))
    if roots:
        recorder.dynamic_roots[id(target)] = roots
    else:
        recorder.dynamic_roots.pop(id(target), None)
    recorder.has_mutation = True
    recorder.fresh.state_changed = True
    recorder.op_count += 1
