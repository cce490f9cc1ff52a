"""Python reading the data of module state (a parameter or buffer) before the call changed anything:
a guard before the call instead of a check after the graph.

A value Python reads from tensor data is normally a speculation, re-checked after the graph that
computed it (speculations.py `speculate`): the graph is specialised on it, and `jitlab capture` counts
that as a break. But when the tensor read is computed only from the program's state (parameters, buffers, global
tensors: their sources start at objects fixed when the JIT was made, not at the call's arguments)
by operations that change nothing and draw no random numbers, before the call changed any tensor
other than those its own operations allocated (fresh_storage.py), its value is known before the
graph runs. The read is then guarded like any other outside value:
the guards recompute it from the state before the call (the recorded operations, replayed) and
compare it with what the capture read, so a change of the state is a guard miss and a new capture,
as for a changed attribute. ParityBench has such reads: Eric-mingjie/network-slimming's
`channel_selection` picks channels with `np.argwhere(self.indexes.data.cpu().numpy())`,
openvinotoolkit/nncf's binarizers run `if self.enabled[0] == 1:` on a buffer, and ShichenLiu's
CondenseNet `LearnedGroupConv` decides on `(self._stage >= stage).all()`. Reads from more than
`MAX_ELEMENTS` state elements, or through more than `MAX_NODES` operations, stay speculations:
recomputing them on every call would cost what the graph does.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import getitem
from typing import TYPE_CHECKING, Any, Protocol

import torch
import torch.fx as fx

from jitlab.jit.graph.recording_tracer import RecordingTracer
from jitlab.jit.graph.torch_calls import MUTATING_FUNCTIONS, RANDOM, is_inplace, node_op_name
from jitlab.jit.guards.sources import ConstSource, Source

if TYPE_CHECKING:
    from jitlab.jit.graph.fresh_storage import FreshStorages


class StateRecorder(Protocol):
    """What guarding a read of the program's state uses of the graph recorder (recorder.py, which
    imports this module): whether the call changed state or drew random numbers, and its tracer.
    tests/jit/test_jit_owned_state.py checks that the real recorder has every member."""

    fresh: FreshStorages
    has_random: bool
    opaque: int

    @property
    def tracer(self) -> StateTracer: ...


class StateTracer(RecordingTracer, Protocol):
    """The tracer as guarding a state read sees it: the graph stage's view, and its recorder."""

    @property
    def recorder(self) -> StateRecorder: ...


MAX_ELEMENTS = 4096  # over all the state tensors a read depends on
MAX_NODES = 32  # operations from the state to the value read


def _pure(node: fx.Node) -> bool:
    """A recorded tensor operation (a tensor method, a torch function, an operator, an attribute
    read) that neither changes a tensor nor draws random numbers. Other callables in the graph (a
    Python or NumPy draw, an autograd Function applied) are not replayed in the guards."""
    if node.op not in ("call_method", "call_function"):
        return False
    if node.op == "call_function" and node.target is not getattr and node.target is not getitem:
        module = getattr(node.target, "__module__", None) or ""
        if module != "_operator" and module != "torch" and not module.startswith("torch."):
            return False
    name = node_op_name(node)
    return bool(name) and not is_inplace(name) and name not in RANDOM and name not in MUTATING_FUNCTIONS


def _state_subgraph(node: fx.Node, tracer: StateTracer) -> tuple[fx.GraphModule, list[Source]] | None:
    """A graph computing `node` from the state tensors it depends on (whose sources start at objects
    fixed when the JIT was made), with their sources in its placeholders' order; None when `node`
    depends on anything else or is too large to recompute in the guards."""
    order: list[fx.Node] = []
    seen: set[fx.Node] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current.op != "placeholder" and not _pure(current):
            return None
        order.append(current)
        stack.extend(current.all_input_nodes)
        if len(order) > MAX_NODES:
            return None
    placeholders = [n for n in order if n.op == "placeholder"]
    tensors = [n.meta.get("example_value") for n in placeholders]
    if (
        not all(isinstance(t, torch.Tensor) for t in tensors)
        or sum(t.numel() for t in tensors) > MAX_ELEMENTS
        or tracer.recorder.fresh.touches(_example_tensors(order))
    ):
        return None
    sources = [tracer.source_of(t) for t in tensors]
    if not all(_from_state(source) for source in sources):
        return None
    graph = fx.Graph()
    mapped: dict[fx.Node, fx.Node] = {}
    for old in placeholders:
        mapped[old] = graph.placeholder(old.name)
    for old in node.graph.nodes:  # in the recorded order, which is a topological one
        if old in seen and old.op != "placeholder":
            mapped[old] = graph.node_copy(old, lambda n: mapped[n])
    graph.output(mapped[node])
    return fx.GraphModule(torch.nn.Module(), graph), sources


def _example_tensors(nodes: list[fx.Node]) -> list[torch.Tensor]:
    """The tensors the nodes gave during the capture: when one of them shares memory with a tensor
    the call changed in place afterwards (`v = (w * 1)[0]`, then `(w * 1)` changed), the value read
    is not what the operations compute from the state."""
    values = (node.meta.get("example_value") for node in nodes)
    return [value for value in values if isinstance(value, torch.Tensor)]


def _from_state(source: Source | None) -> bool:
    while source is not None and not isinstance(source, ConstSource):
        source = source.parent
    return source is not None


class StateRead:
    """The guard's function: the recorded operations on the state tensors, then the speculation's
    check, under no_grad (the values are the same; a tensor that requires grad has no `numpy()`).
    Whatever fails makes the guard miss."""

    __slots__ = ("check", "compute")

    def __init__(self, compute: fx.GraphModule, check: Callable[..., Any]) -> None:
        self.compute = compute
        self.check = check

    def __call__(self, *tensors: torch.Tensor) -> Any:
        try:
            with torch.no_grad():
                return self.check(self.compute(*tensors))
        except Exception:  # noqa: BLE001 - a state the operations fail on is not the captured one
            return _FAILED


_FAILED = object()


def guard_state_read(
    recorder: StateRecorder, node: fx.Node, check: Callable[..., Any], expected: object, text: str
) -> bool:
    """Guard a read of the program's state before the call (see above) and return True; False when
    the read must stay a speculation."""
    if recorder.fresh.state_changed or recorder.has_random or recorder.opaque:
        return False
    tracer = recorder.tracer
    found = _state_subgraph(node, tracer)
    if found is None:
        return False
    compute, sources = found
    if not sources:
        # computed from the graph's constants alone (`torch.arange(2, len(x.shape)).tolist()`, whose
        # arguments the guards already fix): the same value on every call, nothing to guard
        return True
    builder = tracer.builder
    read = builder.const(StateRead(compute, check), "READ")
    names = ", ".join(builder.var(source) for source in sources)
    described = ", ".join(source.describe() for source in sources)
    builder.check(
        sources[0],
        f"{read}({names}) == {builder.const(expected, 'READ_VALUE')}",
        f"{text} (read from {described})",
    )
    return True
