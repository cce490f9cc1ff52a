"""Which in-place changes during a capture can reach the program's state, and which cannot.

A value Python reads from module state (`self.weight.abs().max().item()`) is guarded before the call
instead of re-checked after the graph (state_reads.py), but only while nothing the call did so far
can have changed that state. Counting every in-place operation as such a change is safe but
loses common programs: `nn.ReLU(inplace=True)` changes the output of the convolution before it, and
a quantizer's autograd Function rounds its own copy in place (`input.div(s).round_().mul_(s)`,
VITA-Group/GAN-Slimming's `Conv2dQuant`), and neither can touch a parameter.

A tensor is *fresh* when a tensor operation of the call allocated its memory: its storage is not
the storage of any tensor the operation was given. Such memory cannot belong to the state (the
state's tensors existed before the call, and memory in use is never handed out again), and the
same operations allocate it again on every call that reuses the capture. An in-place change of a
fresh tensor is therefore kept apart from other changes. Everything not shown to be fresh counts
as a change of the state: attribute reads (`x.grad`, which returns a tensor the operation was not
given), storages without data, tensors whose storage cannot be read (sparse), a batch norm's
running statistics, and a tensor whose allocating tensor has died (its memory may since have been
handed to a tensor made natively, outside the recorder's view).

The state read also refuses a value computed through a tensor that shares memory with a fresh
tensor changed in place afterwards (`touches`): `v = (self.w * 1)[0]` followed by an in-place change
of `self.w * 1` changes `v`, which recomputing `(w * 1)[0]` from the state would not show.
"""

from __future__ import annotations

import weakref

import torch

from jitlab.jit.graph.torch_calls import MUTATING_FUNCTIONS, is_inplace, tensors_in


def storage_address(tensor: torch.Tensor) -> int:
    """The address of the memory `tensor` is a view of, 0 where it has none or it cannot be read."""
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):  # sparse, nested and other layouts
        return 0


def mutates(name: str, kwargs: dict) -> bool:
    """Whether the tensor operation `name` called with `kwargs` changes a tensor in place."""
    return is_inplace(name) or name in MUTATING_FUNCTIONS or "out" in kwargs


class FreshStorages:
    """The memory allocated by the call's tensor operations, and whether an in-place operation so
    far may have changed anything else."""

    __slots__ = ("_allocated", "changed", "state_changed")

    def __init__(self) -> None:
        self._allocated: dict[int, weakref.ref[torch.Tensor]] = {}  # address -> tensor allocating it
        self.changed: set[int] = set()  # addresses of fresh tensors changed in place
        self.state_changed = False  # an in-place change not shown to be of a fresh tensor

    def note(self, getter: str | None, name: str, args: tuple, kwargs: dict, out: object) -> bool:
        """Note what the operation `name` that returned `out` allocated and changed; True when it
        changes a tensor in place (fresh or not)."""
        self.note_outputs(getter, args, kwargs, out)
        if mutates(name, kwargs):
            self.note_mutation(name, args, kwargs)
            return True
        return False

    def note_outputs(self, getter: str | None, args: tuple, kwargs: dict, out: object) -> None:
        """Remember the memory `out` was given by the operation, when it is none of its inputs'."""
        if getter is not None:
            return  # an attribute read returns an existing tensor (`x.grad`), allocated before
        outputs = tensors_in(out)
        if not outputs:
            return
        inputs = {storage_address(t) for t in tensors_in((args, kwargs))}
        for tensor in outputs:
            address = storage_address(tensor)
            if address and address not in inputs:
                self._allocated[address] = weakref.ref(tensor)

    def note_mutation(self, name: str, args: tuple, kwargs: dict) -> None:
        """An operation named `name` that changes a tensor in place ran on `args`, `kwargs`."""
        if self.state_changed:
            return
        out = kwargs.get("out")
        if out is not None:
            targets = tensors_in(out)
        elif name == "__setitem__" or is_inplace(name):
            targets = [args[0]] if args and isinstance(args[0], torch.Tensor) else []
        else:
            targets = []  # batch_norm and instance_norm change their running statistics: state
        if not targets or not all(self._fresh(t) for t in targets):
            self.state_changed = True
            return
        self.changed.update(storage_address(t) for t in targets)

    def _fresh(self, tensor: torch.Tensor) -> bool:
        address = storage_address(tensor)
        owner = self._allocated.get(address)
        alive = owner() if owner is not None and address else None
        return alive is not None and storage_address(alive) == address

    def touches(self, tensors: list[torch.Tensor]) -> bool:
        """Whether one of `tensors` shares memory with a tensor changed in place so far."""
        return bool(self.changed) and any(storage_address(t) in self.changed for t in tensors)
