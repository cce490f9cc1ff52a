"""The lookaside of `torch.utils.checkpoint.checkpoint`: the checkpointed function, user code, runs
interpreted as part of the graph (registered when the tracer is imported, like exception_state's)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.utils.checkpoint

from jitlab.jit.tracing.lookasides import Lookasides, register_lookaside


def checkpoint_lookaside(lookasides: Lookasides, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
    """`torch.utils.checkpoint.checkpoint(fn, *args)`: the forward values and the gradients are
    those of `fn(*args)` (checkpointing only trades memory for recomputation), so the graph calls
    `fn` directly. The reentrant variant gives outputs that do not require grad when no input
    does; that is kept by running `fn` without grad in that case."""
    if not args:
        return None
    allowed = {"use_reentrant", "preserve_rng_state"}
    if set(kwargs) - allowed:
        return None  # context_fn, determinism_check, debug, extra keywords: left to torch
    fn, fn_args = args[0], args[1:]
    if not lookasides.specials.user_callable(fn):
        return None
    reentrant = kwargs.get("use_reentrant")

    def run() -> Any:
        lookasides.tracer.notes.append(
            "torch.utils.checkpoint: the checkpointed function is part of the graph (same values and "
            "gradients; its activations are kept instead of recomputed in backward)"
        )
        if reentrant is None:
            warnings.warn(
                "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
                "exception. use_reentrant=False is recommended, but if you need to preserve the "
                "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
                "details on the differences between the two variants.",
                stacklevel=3,
            )
        if reentrant is not False and torch.is_grad_enabled():
            needs_grad = any(isinstance(a, torch.Tensor) and a.requires_grad for a in fn_args)
            if not needs_grad:
                with torch.no_grad():
                    return lookasides.interp.call(fn, fn_args, {})
        return lookasides.interp.call(fn, fn_args, {})

    return run


register_lookaside(torch.utils.checkpoint.checkpoint, checkpoint_lookaside)
