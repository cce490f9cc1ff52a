"""Fusion (MISSION.md §3): multiply a large float32 tensor by 2, k times in a row.

Eager frameworks run one operation per multiplication, each reading and writing the whole tensor,
so the time grows with k from k = 1 on: memory-bandwidth-bound work repeated. A fusing compiler
turns the chain into one pass over memory with k multiplications per element in registers, so the
time stays flat while the pass is bandwidth-bound and only grows once the k multiplications per
element cost more than moving the element (the compute-bound onset; the source saw it near k = 64).

- unfused (eager, one operation per multiply): `numpy`, `torch`;
- fused (compiled): `torch-compile` (Inductor), `jax` (XLA), `tensorflow` (XLA), `numba` and
  `numba-parallel` (one loop over the elements with the k multiplications inside).

The factor is passed as an argument, not a literal 2, so no compiler can fold the chain into one
multiplication by 2^k. Multiplying by 2 is exact in floating point, so the reference x * 2^k is exact.
`throughput` gives the bytes and FLOPs of a call, from which the report shows GB/s and GFLOP/s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitlab.workloads.api import Case, Context, Prepared, Workload, relative_error
from jitlab.workloads.registry import register_workload

K_VALUES = (1, 2, 4, 8, 16, 32, 64, 128)
FACTOR = 2.0
UNFUSED_BACKENDS = ("numpy", "torch")
ITEM_BYTES = 4  # float32


def make_input(case: Case) -> tuple[np.ndarray]:
    return (case.rng.random(case.size, dtype=np.float32),)


def exact_chain(case: Case, inputs: tuple) -> np.ndarray:
    return inputs[0].astype(np.float64) * FACTOR ** int(case.params["k"])


def throughput(size: int, params: dict[str, Any], backend: str) -> dict[str, float]:
    """Bytes moved and FLOPs done by one call: k multiplies per element; a fused pass reads and
    writes the tensor once, an unfused chain k times."""
    k = int(params["k"])
    passes = k if backend in UNFUSED_BACKENDS else 1
    return {"bytes": 2.0 * ITEM_BYTES * size * passes, "flops": float(size * k)}


#: k of the default run: enough to see a fused line stay flat (16 multiplies fused cost about one)
#: while an unfused one grows with k; the compute-bound onset (k near 64) is in the full grid
DEFAULT_K_VALUES = (1, 4, 16)


def default_cells(backend: str, size: int, params: dict[str, Any]) -> bool:
    """The default run compiles torch.compile at k = 1 and 16 only: each cold Inductor compile costs
    10-30 s on a 2-core CPU."""
    return backend != "torch-compile" or int(params["k"]) in (1, 16)


fusion = register_workload(
    Workload(
        name="fusion",
        description="x * 2 repeated k times on a float32 tensor: unfused (eager) vs fused (compiled)",
        # the default run stays within 3 minutes on 2 cores; --full runs the whole grid
        sizes=(10**7,),
        full_sizes=(10**6, 10**7),
        sweep={"k": list(DEFAULT_K_VALUES)},
        full_sweep={"k": list(K_VALUES)},
        default_backends=("numpy", "torch", "torch-compile", "jax"),
        include_cell=default_cells,
        default_budget_s=1.0,
        reference=exact_chain,
        error=relative_error,
        inputs=make_input,
        seeds=2,
    )
)
fusion.throughput = throughput  # read by jitlab.report.throughput
fusion.plot_x = "k"  # the report plots time against k


@fusion.implement("numpy")
def _numpy(ctx: Context) -> Prepared:
    k = int(ctx.params["k"])
    (x,) = ctx.inputs(0)
    factor = np.float32(FACTOR)

    def chain(x: np.ndarray) -> np.ndarray:
        for _ in range(k):
            x = x * factor
        return x

    return Prepared(chain, args=lambda seed: ctx.inputs(seed))


@fusion.implement("torch", "torch-compile")
def _torch(ctx: Context) -> Prepared:
    import torch

    k = int(ctx.params["k"])
    device = ctx.backend.device()
    factor = torch.tensor(FACTOR, dtype=torch.float32, device=device)

    def chain(x, factor):
        for _ in range(k):
            x = x * factor
        return x

    fn = ctx.prepare(chain)
    return Prepared(fn, args=lambda seed: (torch.from_numpy(ctx.inputs(seed)[0]).to(device), factor))


@fusion.implement("jax")
def _jax(ctx: Context) -> Prepared:
    import jax.numpy as jnp

    k = int(ctx.params["k"])
    factor = jnp.float32(FACTOR)

    def chain(x, factor):
        for _ in range(k):
            x = x * factor
        return x

    fn = ctx.prepare(chain)
    return Prepared(fn, args=lambda seed: (jnp.asarray(ctx.inputs(seed)[0]), factor))


@fusion.implement("tensorflow")
def _tensorflow(ctx: Context) -> Prepared:
    import tensorflow as tf

    k = int(ctx.params["k"])
    factor = tf.constant(FACTOR, dtype=tf.float32)

    def chain(x, factor):
        for _ in range(k):
            x = x * factor
        return x

    fn = ctx.prepare(chain)
    return Prepared(fn, args=lambda seed: (tf.constant(ctx.inputs(seed)[0]), factor))


@fusion.implement("numba", "numba-parallel")
def _numba(ctx: Context) -> Prepared:
    import numba

    k = int(ctx.params["k"])
    factor = np.float32(FACTOR)

    # k is a constant of the compiled function (as it is for the tracing compilers), so LLVM
    # unrolls the inner loop and vectorises the outer one; as an argument it would stay a scalar loop
    def chain(x, factor):
        out = np.empty_like(x)
        for i in numba.prange(x.shape[0]):  # a plain range under numba.njit without parallel
            v = x[i]
            for _ in range(k):
                v = v * factor
            out[i] = v
        return out

    fn = ctx.prepare(chain)
    return Prepared(fn, args=lambda seed: (ctx.inputs(seed)[0], factor))
