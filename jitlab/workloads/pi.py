"""Monte Carlo pi: the source blog post's benchmark, done right on every backend.

Draw n points uniformly in the unit square, count those inside the quarter circle, and return
4 * inside / n. Each implementation is the idiomatic fast one for its backend: vectorised where the
backend vectorises, loops where a loop compiler compiles loops, a Triton kernel drawing with
`tl.rand` over blocks, and numba (serial and parallel alike) with a counter-based generator: each
point's bits are a hash of (seed, index), so the loop vectorises and the result depends on the seed,
not on the thread count.

The error of an estimate is statistical: sigma = sqrt(pi (4 - pi) / n). A backend whose error is far
above that for its n has a bug, not bad luck.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jitlab.workloads.api import Context, Prepared, Workload, absolute_error, sampling_error_of_pi
from jitlab.workloads.registry import register_workload
from jitlab.workloads.work import Work


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
#: points per block of work in numba: the unit numba-parallel hands to a thread (the estimate does
#: not depend on it)
POINT_BLOCK = 1 << 16


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
    blocks = (n + POINT_BLOCK - 1) // POINT_BLOCK
    golden, mix = _splitmix64(numba)
    s33 = np.uint64(33)
    low31 = np.uint64((1 << 31) - 1)
    radius2 = np.int64(1 << 62)  # (2**31)**2: the unit circle on the 31-bit grid

    @numba.njit
    def count_block(key, b):
        """Points inside the quarter circle among block b's points."""
        start = b * POINT_BLOCK
        stop = min(start + POINT_BLOCK, n)
        count = 0
        for i in range(start, stop):
            # point i's 64 random bits: a hash of (seed, i), carried from no other point
            h = mix(key + np.uint64(i + 1) * golden)
            x = np.int64(h >> s33)  # 31 bits each: x, y uniform on [0, 2**31)
            y = np.int64(h & low31)
            count += x * x + y * y <= radius2  # exact in int64: no rounding at the boundary
        return count

    # Counter-based: point i's bits are SplitMix64's finaliser applied to key + (i + 1) * golden,
    # which is SplitMix64's i-th output from the state `key`. Nothing is carried from one point to
    # the next, so LLVM vectorises the loop (8 points per AVX-512 register), and the estimate
    # depends on (seed, n) only: not on the thread count, nor on how the points are split into
    # blocks. prange is a plain range without parallel=True, so the two numba backends differ only
    # in threading. Each block writes its own slot and the slots are summed in order afterwards: a
    # parfor reduction variable (`inside += count` in the prange) failed to compile on Python
    # 3.12+ ("unexpected cycle in lookup()").
    def estimate(seed):
        key = mix(np.uint64(seed) + golden)
        counts = np.zeros(blocks, dtype=np.int64)
        for b in numba.prange(blocks):
            counts[b] = count_block(key, b)
        inside = 0
        for b in range(blocks):
            inside += counts[b]
        return 4.0 * inside / n

    return ctx.prepare(estimate)


def _splitmix64(numba: Any) -> tuple[Any, Any]:
    """SplitMix64's increment and finaliser (a 64-bit hash), as a numba function inlined where used.
    The constants are numpy uint64 so that numba keeps all the arithmetic in uint64."""
    golden = np.uint64(0x9E3779B97F4A7C15)
    mix1 = np.uint64(0xBF58476D1CE4E5B9)
    mix2 = np.uint64(0x94D049BB133111EB)
    s30, s27, s31 = np.uint64(30), np.uint64(27), np.uint64(31)

    @numba.njit(inline="always")
    def mix(z):
        z = (z ^ (z >> s30)) * mix1
        z = (z ^ (z >> s27)) * mix2
        return z ^ (z >> s31)

    return golden, mix


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


def work(size: int, params: dict[str, Any], backend: str) -> Work:
    """What one estimate of `size` points costs on `backend`, as its implementation above does it:
    read by `jitlab run --details` to set each backend's time per point beside the machine's limit.

    Two uniform numbers per point need at least one 64-bit random word (two 32-bit halves, or two
    float32). Memory traffic is counted only where it is known to happen; a lower bound otherwise.
    """
    n = size
    if backend == "python":
        # two float64 draws per point; each draw() is a Python-level call, like the overhead probe's
        return Work(random_words=2 * n, calls=2 * n, framework="python", threads=1)
    if backend == "numpy":
        # two float64 per point; chunks of NUMPY_CHUNK points keep every temporary (2 MiB) in cache;
        # per chunk: random twice, multiply twice, add, less_equal, count_nonzero
        chunks = (n + NUMPY_CHUNK - 1) // NUMPY_CHUNK
        return Work(random_words=2 * n, calls=7 * chunks, framework="numpy", threads=1)
    if backend in ("numba", "numba-parallel"):
        # one hash per point, in registers
        return Work(random_words=n, framework="numba", threads=1 if backend == "numba" else None)
    if backend == "jax":
        # XLA:CPU runs threefry as a loop of 5 passes over two (2, n) uint32 arrays (seen in the
        # compiled HLO): each pass reads and writes both, 32 bytes per point
        return Work(random_words=n, memory_bytes=5 * 32 * n, framework="jax")
    if backend == "tensorflow":
        return Work(random_words=n, framework="tensorflow")
    if backend == "torch":
        # eager materialises every intermediate: xy written (8 bytes per point), each square reads
        # and writes 4+4, the sum reads 8 and writes 4, the test reads 4 and writes 1, the count reads 1
        return Work(random_words=n, memory_bytes=42 * n, calls=9, framework="torch")
    if backend == "torch-compile":
        return Work(random_words=n, calls=3, framework="torch")
    if backend == "triton":
        # on the CPU the interpreter runs each program's ~10 block operations through NumPy
        block = 1 << 16  # kernels.pi_triton.INTERPRETER_BLOCK (that module imports torch and triton)
        programs = (n + block - 1) // block
        return Work(random_words=n, calls=10 * programs, framework="numpy", threads=1)
    return Work(random_words=n)


pi.work = work  # read by jitlab.report.limits
