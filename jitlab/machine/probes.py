"""The probes behind the machine peaks, each run in its own process:
`python -m jitlab.machine.probes PROBE RESULT.json [--quick]`.

- `bandwidth`: STREAM triad `a = b + s * c` in a numba `prange` loop over all threads (NumPy when
  Numba is missing), on float64 arrays whose total size is several times the last-level cache;
  best of several repetitions, 24 bytes per element (two reads, one write; write-allocate traffic is
  not counted, as in STREAM); at least 10 passes and 4 seconds.
- `flops`: square float32 and float64 matrix products with NumPy's BLAS and with torch, 2 n^3 FLOPs
  each, best of several repetitions; the higher of the two libraries is the peak.
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
    sys.exit(main(sys.argv[1:]))
