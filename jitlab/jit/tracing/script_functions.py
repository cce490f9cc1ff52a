"""`@torch.jit.script` functions called by interpreted code: their Python code is interpreted.

TorchScript runs a scripted function's operations in C++, where no `TorchFunctionMode` sees them, so
its results reached the graph as tensors of unknown origin and the call ran eagerly for good
(ParityBench's RWKV `MHA_rotary` scripts `apply_rotary_pos_emb`). `torch.jit.script` keeps the
Python function on the scripted one (`_torchdynamo_inline`, for TorchDynamo, which inlines it the
same way); where the trace rules interpret that function (user code), it is interpreted instead and
its operations are recorded. The values are the same; the differences are TorchScript's own: its
exception types (`torch.jit.Error` for a Python `raise`: a call whose Python form raises runs again
in TorchScript, unless it changed a tensor in place before raising, and is not cached) and its
conversions of arguments to annotated types (an int passed for a `float` parameter stays an int in
Python).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jitlab.jit.reasons import ReasonKind

if TYPE_CHECKING:
    from jitlab.jit.tracing.lookaside_host import LookasideHost


def script_function_call(
    lookasides: LookasideHost, fn: Callable[..., Any], args: tuple, kwargs: dict
) -> Callable[[], Any] | None:
    """A `@torch.jit.script` function of user code: TorchScript runs its operations in C++,
    where no torch function mode sees them, so its results were tensors of unknown origin. Its
    Python function (`_torchdynamo_inline`, kept by torch.jit.script for TorchDynamo, which
    inlines it too) computes the same values, and is interpreted instead."""
    original = getattr(fn, "_torchdynamo_inline", None)
    if type(original) is not types.FunctionType or not lookasides.tracer.step_into(original):
        return None

    def run() -> Any:
        lookasides.tracer.notes.append(
            f"@torch.jit.script function {original.__qualname__}: its Python code is part of the graph"
        )
        recorder = lookasides.tracer.recorder
        mutated_before, recorder.has_mutation = recorder.has_mutation, False
        try:
            return lookasides.interp.call(original, args, kwargs)
        except Exception:
            # TorchScript raises its own exception types (torch.jit.Error for a Python raise): unless
            # the Python code changed a tensor before it raised, TorchScript runs the call again,
            # natively, so the program gets what eager code gets
            lookasides.tracer.problem(
                f"@torch.jit.script function {original.__qualname__} raised in its Python form",
                ReasonKind.USER_EXCEPTION,
            )
            if recorder.has_mutation:
                raise
        finally:
            recorder.has_mutation = recorder.has_mutation or mutated_before
        with recorder.pause():
            return fn(*args, **kwargs)

    return run
