"""The probes behind the machine peaks, each run in its own process:
`python -m jitlab.machine.probes PROBE RESULT.json [--quick]`.

- `bandwidth`: STREAM triad `a = b + s * c` in a numba `prange` loop over all threads (NumPy when
  Numba is missing), on float64 arrays whose total size is several times the last-level cache;
  best of several repetitions, 24 bytes per element (two reads, one write; write-allocate traffic is
  not counted, as in STREAM); at least 10 passes and 4 seconds.
- `flops`: square float32 and float64 matrix products with NumPy's BLAS and with torch, 2 n^3 FLOPs
  each, best of several repetitions; the higher of the two libraries is the peak.
- `random`: 64-bit random words per second from a counter-based generator (SplitMix64's finaliser of
  a counter, the cheapest statistically sound way to make random bits, vectorised by LLVM) in a
  numba loop, on one thread and on all threads; needs Numba.
- `overhead:FRAMEWORK`: seconds per call of a one-element addition (`python` is a plain float add).
- `gpu`: every CUDA device's bandwidth, matmul FLOP/s per dtype, launch cost and host<->device
  copies (`jitlab.machine.gpu_probe`).

One process per probe because TensorFlow and Triton abort when they meet in one process, and so that
the frameworks' thread pools do not disturb each other's figures.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from jitlab.lifeline import hold_lifeline, release_lifeline

OVERHEAD_FRAMEWORKS = ("python", "numpy", "torch", "jax", "tensorflow", "numba")


def last_level_cache_bytes() -> int:
    """Largest cache size the kernel reports (0 when unknown)."""
    best = 0
    for size_file in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = size_file.read_text().strip()
        except OSError:
            continue
        unit = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * unit)
    return best


def triad_elements(quick: bool) -> int:
    """Elements per array: three arrays together at least 4x the last-level cache (and >= 768 MB)."""
    if quick:
        return 1 << 20
    total = max(4 * last_level_cache_bytes(), 768 * 1024**2)
    return int(total // (3 * 8))


def best_time(call: Callable[[], Any], repeats: int, min_total_s: float = 0.0) -> float:
    """Fastest of at least `repeats` calls, going on until `min_total_s` has passed (at most 10x
    `repeats` calls): on a shared machine the best of a longer window finds a quieter moment."""
    best = float("inf")
    began = time.perf_counter()
    count = 0
    while count < repeats or (time.perf_counter() - began < min_total_s and count < 10 * repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
        count += 1
    return best


def probe_bandwidth(quick: bool) -> dict[str, Any]:
    n = triad_elements(quick)
    b = np.full(n, 1.0)
    c = np.full(n, 2.0)
    a = np.empty(n)
    scalar = 3.0
    try:
        import numba

        @numba.njit(parallel=True, fastmath=True)
        def triad(a, b, c, s):
            for i in numba.prange(a.shape[0]):
                a[i] = b[i] + s * c[i]

        kernel = f"numba prange triad, {numba.get_num_threads()} threads"
        call = lambda: triad(a, b, c, scalar)  # noqa: E731
    except ImportError:
        kernel = "numpy triad (numba not installed: one thread)"
        tmp = np.empty(n)

        def call() -> None:
            np.multiply(c, scalar, out=tmp)
            np.add(b, tmp, out=a)

    call()  # compile and touch every page
    # quick passes take milliseconds: the best of many finds a quiet moment on a loaded machine
    seconds = best_time(call, 20 if quick else 10, min_total_s=0.2 if quick else 4.0)
    if not np.all(a[:: max(1, n // 1000)] == 1.0 + scalar * 2.0):
        raise RuntimeError("triad kernel computed a wrong result")
    moved = 3 * 8 * n
    return {
        "bandwidth_bytes_per_s": moved / seconds,
        "kernel": kernel,
        "elements": n,
        "bytes_per_pass": moved,
        "best_s": seconds,
        "last_level_cache_bytes": last_level_cache_bytes(),
    }


def probe_flops(quick: bool) -> dict[str, Any]:
    n = 256 if quick else 2048
    repeats = 20 if quick else 5  # quick products take about a millisecond: many, so one quiet moment counts
    result: dict[str, Any] = {"n": n, "by_library": {}}
    rng = np.random.default_rng(0)
    for dtype in ("float32", "float64"):
        x = rng.random((n, n)).astype(dtype)
        y = rng.random((n, n)).astype(dtype)
        x @ y
        rates = {"numpy": 2 * n**3 / best_time(lambda: x @ y, repeats)}  # noqa: B023
        try:
            import torch

            tx, ty = torch.from_numpy(x), torch.from_numpy(y)
            tx @ ty
            rates["torch"] = 2 * n**3 / best_time(lambda: tx @ ty, repeats)  # noqa: B023
        except ImportError:
            pass
        result["by_library"][dtype] = rates
        result[f"flops_{dtype.replace('float', 'f')}"] = max(rates.values())
    return result


#: words per block of the random probe
RANDOM_BLOCK = 1 << 16


def splitmix64_reference(key: int, index: int) -> int:
    """Word `index` of the probe's generator in plain Python: SplitMix64's finaliser of
    key + (index + 1) * 0x9E3779B97F4A7C15, all modulo 2**64."""
    mask = (1 << 64) - 1
    z = (key + (index + 1) * 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def _random_kernels() -> tuple[Any, Any]:
    """(serial, parallel) numba functions XOR-ing n words of the generator, per block."""
    import numba

    golden = np.uint64(0x9E3779B97F4A7C15)
    mix1, mix2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
    s30, s27, s31 = np.uint64(30), np.uint64(27), np.uint64(31)

    @numba.njit
    def block_xor(key, b, n):
        acc = np.uint64(0)
        for i in range(b * RANDOM_BLOCK, min((b + 1) * RANDOM_BLOCK, n)):
            z = key + np.uint64(i + 1) * golden
            z = (z ^ (z >> s30)) * mix1
            z = (z ^ (z >> s27)) * mix2
            acc ^= z ^ (z >> s31)
        return acc

    def xor_words(key, n):
        blocks = (n + RANDOM_BLOCK - 1) // RANDOM_BLOCK
        out = np.zeros(blocks, dtype=np.uint64)
        for b in numba.prange(blocks):
            out[b] = block_xor(key, b, n)
        return out

    return numba.njit(xor_words), numba.njit(parallel=True)(xor_words)


def probe_random(quick: bool) -> dict[str, Any]:
    try:
        import numba
    except ImportError:
        raise RuntimeError("the random-number peak is measured with numba, which is not installed") from None
    serial, parallel = _random_kernels()
    key = np.uint64(0x0123456789ABCDEF)
    check = 3 * RANDOM_BLOCK // 2  # two blocks, one partial
    expected = 0
    for i in range(RANDOM_BLOCK):  # the first block, against plain Python
        expected ^= splitmix64_reference(int(key), i)
    for kernel in (serial, parallel):
        if int(kernel(key, check)[0]) != expected:
            raise RuntimeError("the random-number kernel computed a wrong result")
    # calls of about a millisecond, many of them: a longer call is cut by the scheduler's time
    # slices on a loaded machine, and the best of many short ones finds a quiet moment
    n = 1 << (18 if quick else 22)
    threads = numba.get_num_threads()
    rates = {}
    for count, kernel in ((1, serial), (threads, parallel)):
        seconds = best_time(lambda: kernel(key, n), 20 if quick else 50, min_total_s=0.2 if quick else 2.0)  # noqa: B023
        rates[str(count)] = n / seconds
    return {
        "words_per_s": rates,
        "kernel": "SplitMix64 finaliser of a counter, numba (LLVM), XOR of the words",
        "words": n,
    }


def _tiny_add(framework: str) -> Callable[[], Any]:
    """A callable doing one one-element addition in `framework`, finished when it returns."""
    if framework == "python":
        x, y = 1.0, 2.0
        return lambda: x + y
    if framework == "numpy":
        x, y = np.ones(1), np.ones(1)
        return lambda: x + y
    if framework == "torch":
        import torch

        x, y = torch.ones(1), torch.ones(1)
        return lambda: x + y
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        add = jax.jit(lambda a, b: a + b)
        x, y = jnp.ones(1), jnp.ones(1)
        return lambda: add(x, y).block_until_ready()
    if framework == "tensorflow":
        import tensorflow as tf

        x, y = tf.ones(1), tf.ones(1)
        return lambda: tf.add(x, y)
    if framework == "numba":
        import numba

        add = numba.njit(lambda a, b: a + b)
        x, y = np.ones(1), np.ones(1)
        return lambda: add(x, y)
    raise ValueError(f"unknown framework {framework!r}: choose from {', '.join(OVERHEAD_FRAMEWORKS)}")


def probe_overhead(framework: str, quick: bool) -> dict[str, Any]:
    call = _tiny_add(framework)
    for _ in range(100):
        call()
    loops = 200 if quick else 2000
    blocks = []
    deadline = time.perf_counter() + (0.2 if quick else 2.0)
    while len(blocks) < 5 or (time.perf_counter() < deadline and len(blocks) < 200):
        start = time.perf_counter()
        for _ in range(loops):
            call()
        blocks.append((time.perf_counter() - start) / loops)
    # the lambda wrapper costs a Python call too; it is part of what a user's loop pays
    return {"seconds_per_call": float(np.median(blocks)), "best_s": min(blocks), "calls": loops * len(blocks)}


def run_probe(name: str, quick: bool) -> dict[str, Any]:
    if name == "bandwidth":
        return probe_bandwidth(quick)
    if name == "flops":
        return probe_flops(quick)
    if name == "random":
        return probe_random(quick)
    if name == "gpu":
        from jitlab.machine.gpu_probe import probe_gpus

        return probe_gpus(quick)
    if name.startswith("overhead:"):
        return probe_overhead(name.split(":", 1)[1], quick)
    raise ValueError(f"unknown probe {name!r}")


def main(argv: list[str]) -> int:
    name, result_path = argv[0], argv[1]
    quick = "--quick" in argv[2:]
    try:
        result = {"status": "ok", **run_probe(name, quick)}
    except Exception as exc:
        result = {
            "status": "failed",
            "reason": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    with open(result_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    hold_lifeline()  # dies with its parent, even one killed by SIGKILL (jitlab.lifeline)
    try:
        code = main(sys.argv[1:])
    finally:
        release_lifeline()
    sys.exit(code)
