"""Native torch calls that touch what a graph cannot hold: torch's global state (seeds, `set_*`
switches) and the parts of a training step (backward passes, optimizer and scheduler methods)."""

from __future__ import annotations

import types

import torch

_TORCH_STATE_FUNCTIONS = {"manual_seed", "seed", "fork_rng", "use_deterministic_algorithms", "compile"}


#: torch.Generator's methods that change its state
_GENERATOR_SETTERS = frozenset({"manual_seed", "seed", "set_state", "set_offset", "graphsafe_set_state"})


def generator_problem(fn: object, owner: object) -> str | None:
    """Why a native call that makes a torch.Generator, or changes one, cannot be captured, or None.

    A graph keeps the generator an operation draws from (`torch.randn(3, generator=g)`) as the object
    itself. Made in the call, it is the one the capture made: a hit drew on from where the capture
    left it, where eager code makes a new one and draws the same numbers again. Reseeded in the call
    (`g.manual_seed(5)`, `g.set_state(s)`), the graph did not repeat it. Both gave other numbers than
    eager code's. Drawing from an outside generator that the call does not change stays in the graph:
    it draws from the same object, as eager code does."""
    if fn is torch.Generator:
        return (
            "torch.Generator() made inside the call: a graph would keep drawing from the one made at capture"
        )
    name = getattr(fn, "__name__", "")
    if isinstance(owner, torch.Generator) and name in _GENERATOR_SETTERS:
        return f"torch.Generator.{name} changes a random generator inside the call, which a graph does not repeat"
    return None


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


#: torch's getters of global state that a program may read and act on (`x.to(torch.get_default_dtype())`):
#: what one returned is checked again on every call (`guard_state_read`)
STATE_GETTERS = tuple(
    getter
    for getter in (
        getattr(torch, "get_default_dtype", None),
        getattr(torch, "get_default_device", None),
        getattr(torch, "get_num_threads", None),
        getattr(torch, "get_num_interop_threads", None),
        getattr(torch, "are_deterministic_algorithms_enabled", None),
        getattr(torch, "is_deterministic_algorithms_warn_only_enabled", None),
        getattr(torch, "get_float32_matmul_precision", None),
        getattr(torch, "is_anomaly_enabled", None),
        getattr(torch, "is_inference_mode_enabled", None),
        getattr(torch, "is_warn_always_enabled", None),
    )
    if getter is not None
)
_STATE_GETTER_IDS = frozenset(map(id, STATE_GETTERS))


def reads_torch_state(fn: object, args: tuple, kwargs: dict) -> bool:
    """Whether `fn(*args, **kwargs)` reads one of torch's global settings (`STATE_GETTERS`)."""
    return id(fn) in _STATE_GETTER_IDS and not args and not kwargs
