"""Native torch calls that touch what a graph cannot hold: torch's global state (seeds, `set_*`
switches) and the parts of a training step (backward passes, optimizer and scheduler methods)."""

from __future__ import annotations

import types

import torch

_TORCH_STATE_FUNCTIONS = {"manual_seed", "seed", "fork_rng", "use_deterministic_algorithms", "compile"}


def training_step_part(fn: object, args: tuple) -> str | None:
    """What part of a training step `fn(*args)`, run natively, is (a method of an optimizer or a
    scheduler whose Python code is not interpreted: one of a package other than torch), or None. Their
    effects (optimizer state) are not graph values. torch.optim's own code is interpreted, and C
    functions handed an optimizer (`function.__get__`, `getattr`) are modelled elsewhere."""
    if not isinstance(fn, (types.FunctionType, types.MethodType)):
        return None
    owner = getattr(fn, "__self__", None)
    for value in (owner, *args[:1]):
        if isinstance(value, torch.optim.Optimizer):
            return f"optimizer method {type(value).__name__}.{getattr(fn, '__name__', '?')}"
        if isinstance(value, torch.optim.lr_scheduler.LRScheduler):
            return f"learning-rate scheduler method {type(value).__name__}.{getattr(fn, '__name__', '?')}"
    return None


def changes_torch_state(fn: object) -> bool:
    """Whether `fn` (a function of torch) sets torch's global state: `set_*`, seeds, `compile`."""
    name = getattr(fn, "__name__", "") or ""
    return name.startswith("set_") or name in _TORCH_STATE_FUNCTIONS
