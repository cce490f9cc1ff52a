"""Asynchronous execution (MISSION.md §5): 10,000 small dependent steps, waiting for the result after
every step against waiting once at the end.

A step is `x = tanh(w @ x + 0.5)` on a 64-vector, with `w` a contraction (so the float32 steps
converge to the same fixed point as the float64 reference, and never reach denormal numbers). An asynchronous framework returns from each call before
the work is done, so when nobody waits, Python enqueues the next step while the previous one runs
and the frontend and backend overlap (about t1 + 10000 t2 + t3); waiting after every step serialises
them (about 10000 (t1 + t2 + t3)).

- `jax`: asynchronous even on the CPU; the wait is `block_until_ready`.
- `torch`: asynchronous on a CUDA GPU (the wait is `torch.cuda.synchronize`); on the CPU it is
  synchronous, there is nothing to wait for, and both variants do the same work: the control.

The swept parameter `sync` is `every-step` or `once`; the speed-up table shows their ratio.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitlab.backends.sync import block_until_done
from jitlab.workloads.api import Case, Context, Workload, absolute_error
from jitlab.workloads.registry import register_workload

WIDTH = 64
SYNC_MODES = ("every-step", "once")
#: scale of w: its spectral norm is about 2 * CONTRACTION < 1
CONTRACTION = 0.4
BIAS = 0.5


def make_inputs(case: Case) -> tuple[np.ndarray, np.ndarray]:
    rng = case.rng
    w = (CONTRACTION * rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)
    x = rng.standard_normal(WIDTH).astype(np.float32)
    return w, x


def reference_steps(case: Case, inputs: tuple) -> np.ndarray:
    w, x = (a.astype(np.float64) for a in inputs)
    for _ in range(case.size):
        x = np.tanh(w @ x + BIAS)
    return x


async_steps = register_workload(
    Workload(
        name="async",
        description="10,000 dependent small steps: wait after every step vs once at the end",
        sizes=(10_000,),
        size_name="steps",
        sweep={"sync": list(SYNC_MODES)},
        reference=reference_steps,
        error=absolute_error,
        error_name="max |x - float64 x|",
        inputs=make_inputs,
        seeds=1,
        # a call is 10,000 steps: the time for that loop to return is not a dispatch time
        dispatch_meaningful=False,
        default_budget_s=2.0,
    )
)


def baseline(backend: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Waiting once is compared with waiting after every step on the same backend."""
    return backend, {**params, "sync": "every-step"}


async_steps.baseline = baseline  # read by jitlab.report.speedup


def _run_steps(step, wait, steps: int, every_step: bool):
    def run(w, x):
        for _ in range(steps):
            x = step(w, x)
            if every_step:
                wait(x)
        return x

    return run


@async_steps.implement("jax")
def _jax(ctx: Context):
    import jax.numpy as jnp

    step = ctx.prepare(lambda w, x: jnp.tanh(w @ x + BIAS))
    w, x = (jnp.asarray(a) for a in ctx.inputs(0))
    run = _run_steps(step, block_until_done, ctx.size, ctx.params["sync"] == "every-step")
    return lambda seed: run(w, x)


@async_steps.implement("torch")
def _torch(ctx: Context):
    import torch

    device = ctx.backend.device()
    w, x = (torch.from_numpy(a).to(device) for a in ctx.inputs(0))

    def step(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(w @ x + BIAS)

    run = _run_steps(step, block_until_done, ctx.size, ctx.params["sync"] == "every-step")
    return lambda seed: run(w, x)
