"""Native torch calls that touch what a graph cannot hold: torch's global state (seeds, `set_*`
switches) and the parts of a training step (backward passes, optimizer and scheduler methods)."""

from __future__ import annotations

from typing import Any

import torch

_TORCH_STATE_FUNCTIONS = {"manual_seed", "seed", "fork_rng", "use_deterministic_algorithms", "compile"}


def training_step_part(fn: Any, args: tuple) -> str | None:
    """What part of a training step `fn(*args)` is (a backward pass, an optimizer or scheduler
    method), or None. Their effects (gradients accumulated, optimizer state) are not graph values."""
    if fn is torch.Tensor.backward or fn is torch.autograd.backward:
        return "a backward pass (loss.backward())"
    if fn is torch.autograd.grad:
        return "torch.autograd.grad"
    owner = getattr(fn, "__self__", None)
    for value in (owner, *args[:1]):
        if isinstance(value, torch.optim.Optimizer):
            return f"optimizer method {type(value).__name__}.{getattr(fn, '__name__', '?')}"
        if isinstance(value, torch.optim.lr_scheduler.LRScheduler):
            return f"learning-rate scheduler method {type(value).__name__}.{getattr(fn, '__name__', '?')}"
    return None


def changes_torch_state(fn: Any) -> bool:
    """Whether `fn` (a function of torch) sets torch's global state: `set_*`, seeds, `compile`."""
    name = getattr(fn, "__name__", "") or ""
    return name.startswith("set_") or name in _TORCH_STATE_FUNCTIONS
