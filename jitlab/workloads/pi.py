"""Monte Carlo pi: the source blog post's benchmark, done right on every backend.

Draw n points uniformly in the unit square, count those inside the quarter circle, and return
4 * inside / n. Each implementation is the idiomatic fast one for its backend: vectorised where the
backend vectorises, loops where a loop compiler compiles loops, a Triton kernel drawing with
`tl.rand` over blocks, and numba (serial and parallel alike) with an independent random stream per
block of points (so the result depends on the seed, not on the thread count).

The error of an estimate is statistical: sigma = sqrt(pi (4 - pi) / n). A backend whose error is far
above that for its n has a bug, not bad luck.
"""

from __future__ import annotations

import math

import numpy as np

from jitlab.workloads.api import Context, Prepared, Workload, absolute_error, sampling_error_of_pi
from jitlab.workloads.registry import register_workload


def accuracy_score(value: float, reference: float) -> float:
    """The source document's score, 1 - |pi - v| / pi. Saturates near 1; kept for comparison only."""
    return 1.0 - abs(reference - value) / reference


pi = register_workload(
    Workload(
        name="pi",
        description="Monte Carlo estimate of pi from n uniform points in the unit square",
        sizes=(10**4, 10**5, 10**6, 10**7),
        reference=math.pi,
        error=absolute_error,
        error_name="|estimate - pi|",
        expected_error=sampling_error_of_pi,
        extra_metrics={"accuracy score": accuracy_score},
        seeds=5,
    )
)

#: points drawn per vectorised chunk: keeps temporaries in cache-sized pieces and memory bounded
NUMPY_CHUNK = 1 << 18
#: points per independent random stream in numba-parallel
STREAM_BLOCK = 1 << 16


@pi.implement("python")
def _python(ctx: Context):
    import random

    n = ctx.size

    def estimate(seed: int) -> float:
        draw = random.Random(seed).random
        inside = 0
        for _ in range(n):
            x = draw()
            y = draw()
            if x * x + y * y <= 1.0:
                inside += 1
        return 4.0 * inside / n

    return estimate


@pi.implement("numpy")
def _numpy(ctx: Context):
    n = ctx.size

    def estimate(seed: int) -> float:
        rng = np.random.default_rng(seed)
        inside = 0
        for start in range(0, n, NUMPY_CHUNK):
            m = min(NUMPY_CHUNK, n - start)
            x = rng.random(m)
            y = rng.random(m)
            inside += int(np.count_nonzero(x * x + y * y <= 1.0))
        return 4.0 * inside / n

    return estimate


@pi.implement("numba", "numba-parallel")
def _numba(ctx: Context):
    import numba

    n = ctx.size
    blocks = (n + STREAM_BLOCK - 1) // STREAM_BLOCK
    # splitmix64 constants, typed so that numba keeps the arithmetic in uint64
    golden = np.uint64(0x9E3779B97F4A7C15)
    mix1 = np.uint64(0xBF58476D1CE4E5B9)
    mix2 = np.uint64(0x94D049BB133111EB)
    s30, s27, s31, s11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
    to_unit = 1.0 / 9007199254740992.0  # 2**-53

    @numba.njit(inline="always")
    def splitmix(state):
        state = state + golden
        z = state
        z = (z ^ (z >> s30)) * mix1
        z = (z ^ (z >> s27)) * mix2
        return state, z ^ (z >> s31)

    @numba.njit
    def count_block(seed, b):
        """Points inside the quarter circle among block b's points, from the block's own stream."""
        # an independent stream per block: its state is a hash of (seed, block)
        state, _ = splitmix(np.uint64(seed) * golden + np.uint64(b))
        state = splitmix(state)[0]  # one more mixing step between the seed and the first draw
        start = b * STREAM_BLOCK
        stop = min(start + STREAM_BLOCK, n)
        count = 0
        for _ in range(start, stop):
            state, rx = splitmix(state)
            state, ry = splitmix(state)
            x = (rx >> s11) * to_unit
            y = (ry >> s11) * to_unit
            if x * x + y * y <= 1.0:
                count += 1
        return count

    # The same code for both numba backends: prange is a plain range without parallel=True, so the
    # two differ only in threading. The generator is SplitMix64 (a Weyl sequence through a 64-bit
    # mixer), which LLVM vectorises; np.random's Mersenne Twister in numba is ~30x slower here.
    # Each block writes its own slot and the slots are summed in order afterwards: no parfor
    # reduction variable. (A `inside += count` reduction over the prange, with the block loop
    # inline, made numba's parfor pass fail on Python 3.12+ with "unexpected cycle in lookup()":
    # 3.12's bytecode splits the loop's variable copies so the reduction's definitions form a cycle.)
    def estimate(seed):
        counts = np.zeros(blocks, dtype=np.int64)
        for b in numba.prange(blocks):
            counts[b] = count_block(seed, b)
        inside = 0
        for b in range(blocks):
            inside += counts[b]
        return 4.0 * inside / n

    return ctx.prepare(estimate)


@pi.implement("jax")
def _jax(ctx: Context):
    import jax
    import jax.numpy as jnp

    n = ctx.size

    def estimate(key):
        xy = jax.random.uniform(key, (2, n), dtype=jnp.float32)
        inside = jnp.count_nonzero(xy[0] * xy[0] + xy[1] * xy[1] <= 1.0)
        return 4.0 * inside / n

    return Prepared(ctx.prepare(estimate), args=lambda seed: (jax.random.key(seed),))


@pi.implement("tensorflow")
def _tensorflow(ctx: Context):
    import tensorflow as tf

    n = ctx.size

    def estimate(seed):
        # alg="threefry": XLA lowers it natively; the default ("auto_select") ran ~100x slower
        # under jit_compile on the CPU when measured with jitlab.
        xy = tf.random.stateless_uniform((2, n), seed=seed, dtype=tf.float32, alg="threefry")
        inside = tf.math.count_nonzero(xy[0] * xy[0] + xy[1] * xy[1] <= 1.0)
        return 4.0 * tf.cast(inside, tf.float64) / n

    return Prepared(ctx.prepare(estimate), args=lambda seed: (tf.constant([seed, 0], dtype=tf.int64),))


@pi.implement("torch", "torch-compile")
def _torch(ctx: Context):
    import torch

    n = ctx.size
    device = ctx.backend.device()

    def estimate():
        xy = torch.rand(2, n, device=device)
        inside = torch.count_nonzero(xy[0] * xy[0] + xy[1] * xy[1] <= 1.0)
        return 4.0 * inside / n

    def seeded(seed: int) -> tuple:
        # torch.compile generates its own Philox RNG from the global seed; seeding here, outside
        # the timed call, makes both eager and compiled results reproducible per seed.
        torch.manual_seed(seed)
        return ()

    return Prepared(ctx.prepare(estimate), args=seeded)


@pi.implement("triton")
def _triton(ctx: Context):
    from jitlab.workloads.kernels.pi_triton import triton_pi

    n = ctx.size
    device = ctx.backend.device()
    return lambda seed: triton_pi(n, seed, device)
