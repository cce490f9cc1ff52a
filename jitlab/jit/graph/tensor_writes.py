"""Writes to attributes of tensors that existed before the call.

`param.data = new` swaps the tensor's data in place (weight clipping, re-initialisation, EMA copies in
real code). It is recorded as one graph operation, `set_data(param, new)`, whose result stands for
`param` in the rest of the graph: with the graph's inputs being the very parameters read from the
module, running the graph does the swap on every call as eager code does.

Other tensor attributes (`requires_grad`, `grad`, `names`, user attributes stored on a tensor) are
not replayed: a capture that writes them is not cached.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

import torch
import torch.fx as fx

from jitlab.jit.graph.fresh_storage import FreshStorages


class DataWriteRecorder(Protocol):
    """What recording `target.data = value` uses of the graph recorder (recorder.py's `GraphRecorder`;
    tracing's writes.py calls this): the graph and the nodes of tensors, the shapes that depend on
    data, and what the swap does to the program's state. tests/jit/test_jit_owned_state.py checks
    that the real recorder has every member."""

    graph: fx.Graph
    node_of: dict[int, tuple[torch.Tensor, fx.Node]]
    dynamic_roots: dict[int, frozenset[Any]]
    fresh: FreshStorages
    has_mutation: bool
    op_count: int

    def node_for(self, tensor: torch.Tensor) -> fx.Node: ...

    def sync_grad_mode(self) -> None: ...

    def pause(self) -> contextlib.AbstractContextManager[None]: ...


def set_data(target: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """`target.data = value`, as a graph operation that returns `target`."""
    target.data = value
    return target


def record_set_data(recorder: DataWriteRecorder, target: torch.Tensor, value: torch.Tensor) -> None:
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
