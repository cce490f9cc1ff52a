"""Python reading the data of module state (a parameter or buffer) before the call changed anything:
a guard before the call instead of a check after the graph.

A value Python reads from tensor data is normally a speculation, re-checked after the graph that
computed it (recorder.py `_speculate`): the graph is specialised on it, and `jitlab capture` counts
that as a break. But when the tensor read is an outside tensor held by the program's state (a
parameter, a buffer, a global: its source starts at an object fixed when the JIT was made, not at
the call's arguments), read as it is (through `.data`, `.detach()`, `.cpu()`, `.contiguous()`)
before the call mutated any tensor, its value is known before the graph runs. The read is then
guarded like any other outside value: the guards compute it from the state before the call and
compare it with what the capture read, and a change of the state is a guard miss and a new capture,
as for a changed attribute (e.g. ParityBench's Eric-mingjie/network-slimming `channel_selection`,
which picks channels with `np.argwhere(self.indexes.data.cpu().numpy())`). Tensors over
`MAX_ELEMENTS` elements stay speculations: comparing them on every call costs what reading them does.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx as fx

from jitlab.jit.guards.sources import ConstSource, Source

MAX_ELEMENTS = 4096
_ALIAS_METHODS = ("detach", "cpu", "contiguous")


def _alias_chain(node: fx.Node) -> tuple[fx.Node, list[str]] | None:
    """The placeholder `node` is an alias of, and the alias steps from it (outermost last), or None."""
    steps: list[str] = []
    while node.op != "placeholder":
        if (
            node.op == "call_method"
            and node.target in _ALIAS_METHODS
            and len(node.args) == 1
            and not node.kwargs
        ):
            steps.append(node.target)
        elif node.op == "call_function" and node.target is getattr and node.args[1:] == ("data",):
            steps.append("data")
        else:
            return None
        if not isinstance(node.args[0], fx.Node):
            return None
        node = node.args[0]
    return node, steps[::-1]


def _from_state(source: Source | None) -> bool:
    while source is not None and not isinstance(source, ConstSource):
        source = source.parent
    return source is not None


class StateRead:
    """The guard's function: the alias steps, then the speculation's check, on the state's tensor."""

    __slots__ = ("check", "steps")

    def __init__(self, check: Any, steps: list[str]) -> None:
        self.check = check
        self.steps = tuple(steps)

    def __call__(self, tensor: torch.Tensor) -> Any:
        for step in self.steps:
            tensor = tensor.data if step == "data" else getattr(tensor, step)()
        return self.check(tensor)


def guard_state_read(recorder: Any, node: fx.Node, check: Any, expected: Any, text: str) -> bool:
    """Guard a read of module state before the call (see above) and return True; False when the read
    must stay a speculation."""
    if recorder.has_mutation or recorder.opaque_mutation or recorder.opaque:
        return False
    chain = _alias_chain(node)
    if chain is None:
        return False
    placeholder, steps = chain
    tensor = placeholder.meta.get("example_value")
    tracer = recorder.tracer
    if not isinstance(tensor, torch.Tensor) or tensor.numel() > MAX_ELEMENTS:
        return False
    source = tracer.source_of(tensor)
    if not _from_state(source):
        return False
    builder = tracer.builder
    read = builder.const(StateRead(check, steps), "READ")
    builder.check(
        source, f"{read}({{v}}) == {builder.const(expected, 'READ_VALUE')}", f"{text} (read from {{v}})"
    )
    return True
