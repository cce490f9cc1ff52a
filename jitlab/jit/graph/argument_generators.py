"""Random generators of the call's arguments (`pipe(prompt, generator=torch.Generator().manual_seed(0))`):
drawn from by the graph through a slot that the entry's guards fill, not kept as the capture's object.

A graph that keeps the generator the capture drew from as a constant draws from that object on every
hit, so the entry has to guard it by identity, and a program that makes a new generator for each call
(diffusers' pipelines, seeded data augmentation) was captured again on every call. Here an operation
that draws from a generator of the call's arguments (`torch.randn(shape, generator=g)`,
`x.normal_(generator=g)`) is recorded as a node drawing from the generator a `GeneratorSlot` holds.
The guards of the block whose graph draws put the call's own generator in the slot, so a hit draws
from the caller's generator, in program order, and leaves it where eager code would. These nodes run
on the host between compiled parts (frontend/host_split.py), since a compiler would build the
capture's generator into its code.

The slot is thread-local: two threads hitting one entry each draw from their own call's generator.
Which generators are drawn through a slot, and which stay guarded by identity, the tracer decides
(tracing/call_objects.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch


class GeneratorSlot(threading.local):
    """The generator of the current call, per thread: put by a guard, read by the draw nodes."""

    value: torch.Generator | None = None

    def put(self, generator: torch.Generator) -> bool:
        """Hold `generator` for the graph about to run (a guard: always true)."""
        self.value = generator
        return True


def slot_draw(fn: Callable[..., object], slot: GeneratorSlot, name: str) -> Callable[..., object]:
    """The node target for `fn(*args, generator=g, **kwargs)` with g taken from `slot` when it runs.
    It bears `fn`'s name, so that what reads a node's operation (random numbers, in-place writes)
    sees the operation it stands for."""

    def draw(*args: object, **kwargs: object) -> object:
        return fn(*args, generator=slot.value, **kwargs)

    draw.__name__ = draw.__qualname__ = name
    draw.jit_generator_slot = slot  # type: ignore[attr-defined]
    draw.jit_drawn = fn  # type: ignore[attr-defined]  # the run on fake tensors calls it without one
    return draw


def is_slot_draw(target: object) -> bool:
    """Whether a node's target draws from a generator slot (it runs on the host)."""
    return getattr(target, "jit_generator_slot", None) is not None
