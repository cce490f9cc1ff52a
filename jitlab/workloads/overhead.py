"""Overhead (MISSION.md §3): a one-element addition repeated n times, one framework call each.

Each call `x = add(x, one)` depends on the previous one, and the work per call is a single addition,
so the time is all framework overhead: Python, dispatch, argument checks, allocation of the result,
and for compiled backends the guard checks and the call into compiled code. Every backend runs its
own way: `add` is the backend's `prepare` of `lambda a, b: a + b` (eager for python, numpy and
torch; torch.compile, jax.jit, tf.function(jit_compile=True) and numba.njit otherwise), on a
one-element array (a float for plain Python). The report shows operations per second.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitlab.workloads.api import Context, Workload, absolute_error
from jitlab.workloads.registry import register_workload


def throughput(size: int, params: dict[str, Any], backend: str) -> dict[str, float]:
    return {"ops": float(size)}


overhead = register_workload(
    Workload(
        name="overhead",
        description="n dependent one-element additions, one framework call each: operations per second",
        sizes=(10**3,),
        reference=lambda case, inputs: float(case.size),
        error=absolute_error,
        error_name="|sum - n|",
        seeds=1,
        # a call is a loop of n framework calls on one-element host arrays
        dispatch_meaningful=False,
        device_timing=False,
        default_budget_s=2.0,
    )
)
overhead.throughput = throughput  # read by jitlab.report.throughput


def _one_element(backend: str, value: float) -> Any:
    """`value` as the backend's one-element array (a float for plain Python)."""
    if backend == "python":
        return value
    if backend in ("torch", "torch-compile"):
        import torch

        return torch.full((1,), value)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.full((1,), value, dtype=jnp.float32)
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.fill((1,), tf.constant(value, dtype=tf.float32))
    return np.full(1, value, dtype=np.float32)


@overhead.implement("python", "numpy", "numba", "torch", "torch-compile", "jax", "tensorflow")
def _add_loop(ctx: Context):
    n = ctx.size
    add = ctx.prepare(lambda a, b: a + b)
    zero = _one_element(ctx.backend.name, 0.0)
    one = _one_element(ctx.backend.name, 1.0)

    scalar = ctx.backend.name != "python"

    def repeat(seed: int) -> Any:
        x = zero
        for _ in range(n):
            x = add(x, one)
        return x[0] if scalar else x  # one more operation, so the stored value is a number

    return repeat
