"""`nn.Parameter(t, requires_grad=False)` called by interpreted code: an alias of `t` in the graph.

A forward that wraps a tensor in a parameter on every call (`x + nn.Parameter(self.pe,
requires_grad=False)`, a positional encoding in several ParityBench programs) made a tensor no torch
function a `TorchFunctionMode` sees: `Parameter.__new__` calls `Tensor._make_subclass`, so the
parameter reached the graph as a tensor of unknown origin and the call ran eagerly for good. Such a
parameter shares `t`'s memory and is detached from its graph, which is `torch.detach(t)`: the
parameter is made as eager code makes it (so the capture sees an `nn.Parameter`, for `isinstance`
and for attribute writes) and recorded as that node. Operations on a parameter give plain tensors,
so the graph's results are eager's. A cache hit gives the node's plain tensor instead of a new
parameter, so a parameter made in the call may not leave it (returned, or stored where the caller
sees it, or alive across a graph break): the writers refuse that capture (effects/replay.py
`refuse_made_tensor`). `requires_grad=True` (the default) makes a new leaf of autograd, which no
graph op makes: left to torch, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.tracing.lookasides import Lookasides, register_lookaside


def _made_parameter(lookasides: Lookasides, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
    if len(args) > 2 or set(kwargs) - {"data", "requires_grad"}:
        return None
    named = dict(zip(("data", "requires_grad"), args))
    if set(named) & set(kwargs):
        return None  # given twice: Parameter raises, as in eager code
    named.update(kwargs)
    data, requires_grad = named.get("data"), named.get("requires_grad", True)
    if type(data) is not torch.Tensor or requires_grad is not False:
        return None
    recorder = lookasides.tracer.recorder

    def run() -> Any:
        with recorder.pause():
            parameter = nn.Parameter(data, requires_grad=False)
        recorder.record_opaque_call(torch.detach, (data,), {}, parameter, mutates=False, random=False)
        return parameter

    return run


register_lookaside(nn.Parameter, _made_parameter)
