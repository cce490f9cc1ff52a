"""A guard on which tensor inputs share memory, for graphs that change an input in place.

Two tensor inputs that are different objects can share memory: `x.detach()`, `w[:]`, `p.data`, or
a parameter passed to the model as its own argument. Replayed on such inputs, the graph's
operations still do what eager code does, in the same order. Two things a cache entry does besides
replaying them assume that the memory is shared as it was when captured:

- the check prefix (check_prefix.py) computes the speculated values *before* the graph, from the
  inputs they read; an input the graph changes in place earlier than the read is only left out
  when it shares no memory with them (`x.add_(1)` then `if w.sum() > 3:` with `x` a view of `w`);
- a compiling backend (AOTAutograd, Inductor) compiles for the aliasing of the example inputs: it
  reads every input before writing the changed ones back, so `w` would be read unchanged.

So when the graph changes an input in place and the entry has a check prefix or the backend
compiles, the entry guards that each changed input shares memory with exactly the inputs it shared
it with when captured (in the usual case, none). TorchDynamo guards the same (its storage-overlap
guard). Memory is compared by storage: tensors of different storages never overlap.
"""

from __future__ import annotations

import torch
import torch.fx as fx

from jitlab.jit.entries.check_prefix import changed_memory, memory_of, mutated, origin_of
from jitlab.jit.graph.fresh_storage import storage_address
from jitlab.jit.guards.builder import GuardBuilder

_UNTYPED_STORAGE = torch.Tensor.untyped_storage
_DATA_PTR = torch.UntypedStorage.data_ptr


class SharedMemory:
    """The guard's function: called with every tensor input in placeholder order, True when each
    changed input (by position) shares memory with the same inputs as when captured."""

    __slots__ = ("alone", "changed", "direct", "groups")

    def __init__(
        self, changed: tuple[int, ...], groups: tuple[tuple[int, ...], ...], direct: bool = False
    ) -> None:
        self.changed = changed
        self.groups = groups
        self.alone = all(len(group) == 1 for group in groups)  # the usual case: no memory shared
        # no captured tensor's class overrides `untyped_storage`: torch's own method, mapped over
        # the inputs without a Python frame each (a training step has hundreds of inputs). A
        # tensor of another class fails the entry's TensorGuards check (exact classes) anyway.
        self.direct = direct

    def __call__(self, *tensors: torch.Tensor) -> bool:
        try:
            if self.direct:
                addresses = list(map(_DATA_PTR, map(_UNTYPED_STORAGE, tensors)))
            else:
                addresses = [tensor.untyped_storage().data_ptr() for tensor in tensors]
        except (RuntimeError, NotImplementedError, TypeError):  # a layout without storage (sparse)
            addresses = [storage_address(tensor) for tensor in tensors]
        if self.alone and len(set(addresses)) == len(addresses):
            return True  # no two inputs share memory: one pass and one set
        by_address: dict[int, list[int]] = {}
        for index, address in enumerate(addresses):
            by_address.setdefault(address, []).append(index)
        return all(tuple(by_address[addresses[i]]) == group for i, group in zip(self.changed, self.groups))


def changed_inputs(graph: fx.Graph) -> set[fx.Node]:
    """The placeholders of `graph` that its operations may change in place: directly, through views,
    or through an operation that gave their memory back (`x.contiguous()`, `x.to(x.dtype)`)."""
    memory = changed_memory(graph)
    found = {node for node in graph.nodes if node.op == "placeholder" and memory_of(node) in memory}
    for node in graph.nodes:
        for target in mutated(node):
            start = origin_of(target)
            if start.op == "placeholder":
                found.add(start)
    return found


def shared_memory_check(inputs: list[fx.Node], graph: fx.Graph) -> tuple[SharedMemory, list[int]] | None:
    """The guard's function for `graph`, whose placeholders stand for `inputs` (captured nodes, in
    the same order), and the positions among `inputs` of the tensors to call it with; None when the
    graph changes no input in place."""
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    changed = changed_inputs(graph)
    if not changed:
        return None
    tensors = [i for i, node in enumerate(inputs) if isinstance(node.meta.get("example_value"), torch.Tensor)]
    if len(tensors) < 2:
        return None
    # where each input's memory was before the call changed it (recorder.add_input notes it)
    addresses = [memory_of(inputs[i]) for i in tensors]
    positions = tuple(k for k, i in enumerate(tensors) if placeholders[i] in changed)
    groups = tuple(tuple(j for j, a in enumerate(addresses) if a == addresses[k]) for k in positions)
    direct = all(type(inputs[i].meta["example_value"]).untyped_storage is _UNTYPED_STORAGE for i in tensors)
    return SharedMemory(positions, groups, direct), tensors


def describe(check: SharedMemory) -> str:
    if check.alone:
        return "the inputs changed in place share memory with no other tensor input"
    return "the inputs changed in place share memory as when captured"


def guard_input_memory(graph: fx.Graph, builder: GuardBuilder) -> None:
    """Add the shared-memory guard for a single-graph entry (see above)."""
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    found = shared_memory_check(placeholders, graph)
    if found is None:
        return
    check, tensors = found
    names = [placeholders[i].meta.get("jit_var") for i in tensors]
    if any(name is None for name in names):
        return  # an input of unknown origin: the entry is not cached (codegen._input_var says why)
    builder.shared_memory(f"{builder.const(check, 'MEMORY')}({', '.join(names)})", describe(check))
