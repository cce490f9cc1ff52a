"""The GPU peaks, measured with torch on every CUDA device (run as the `gpu` probe, in its own process).

Per device, every rate the best of several repetitions timed with CUDA events (the GPU's own clock):
- memory bandwidth: a copy `b = a` (2 x 4 bytes per float32 element) and a triad `a = b + s * c`
  (3 x 4 bytes) over arrays far beyond the L2 cache; the higher of the two is the peak;
- matrix-product FLOP/s (2 n^3 per product) in float32 on CUDA cores (TF32 off), float32 inputs
  with TF32 tensor cores, bfloat16, float16 and float64;
- kernel launch cost: host seconds per launch of a one-element kernel when launches are queued
  back to back (what a loop of small operators pays), and the round trip of one launch followed
  by a synchronisation;
- host<->device copy bandwidth from and to pinned host memory.
Each figure is shown beside the vendor's published one for known models (`gpu_specs`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

from jitlab.machine.gpu_specs import spec_for

MATMUL_DTYPES = ("float32", "tf32", "bfloat16", "float16", "float64")


def _best_event_time(torch: Any, call: Callable[[], Any], repeats: int) -> float:
    """Fastest of `repeats` calls in seconds, each bracketed by CUDA events (after 2 warm-up calls)."""
    for _ in range(2):
        call()
    torch.cuda.synchronize()
    pairs = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)
    ]
    for start, end in pairs:
        start.record()
        call()
        end.record()
    torch.cuda.synchronize()
    return min(start.elapsed_time(end) for start, end in pairs) / 1e3


def memory_bandwidth(torch: Any, quick: bool) -> dict[str, Any]:
    elements = 1 << (22 if quick else 28)  # 2^28 float32: 1 GiB per array, far beyond any L2
    a = torch.empty(elements, dtype=torch.float32, device="cuda")
    b = torch.full((elements,), 1.0, dtype=torch.float32, device="cuda")
    c = torch.full((elements,), 2.0, dtype=torch.float32, device="cuda")
    repeats = 5 if quick else 20
    copy_s = _best_event_time(torch, lambda: a.copy_(b), repeats)
    triad_s = _best_event_time(torch, lambda: torch.add(b, c, alpha=3.0, out=a), repeats)
    if not bool((a[:: max(1, elements // 1000)] == 7.0).all()):
        raise RuntimeError("triad kernel computed a wrong result")
    item = 4
    copy_rate = 2 * item * elements / copy_s
    triad_rate = 3 * item * elements / triad_s
    return {
        "bandwidth_bytes_per_s": max(copy_rate, triad_rate),
        "copy_bytes_per_s": copy_rate,
        "triad_bytes_per_s": triad_rate,
        "elements": elements,
    }


def matmul_flops(torch: Any, quick: bool) -> dict[str, Any]:
    n = 1024 if quick else 8192
    repeats = 3 if quick else 10
    rates: dict[str, float] = {}
    previous = torch.get_float32_matmul_precision()
    try:
        for name in MATMUL_DTYPES:
            # tf32 is float32 with the tensor cores allowed (set below), not a torch dtype
            dtype = torch.float32 if name == "tf32" else getattr(torch, name)
            size = n if name != "float64" else max(n // 2, 512)  # float64 is slow on most GPUs
            x = torch.rand(size, size, dtype=dtype, device="cuda")
            y = torch.rand(size, size, dtype=dtype, device="cuda")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # newer torch prefers fp32_precision; both work
                torch.set_float32_matmul_precision("high" if name == "tf32" else "highest")
            seconds = _best_event_time(torch, lambda: x @ y, repeats)  # noqa: B023
            rates[name] = 2 * size**3 / seconds
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.set_float32_matmul_precision(previous)
    return {"flops": rates, "n": n}


def launch_cost(torch: Any, quick: bool) -> dict[str, float]:
    x = torch.zeros(1, device="cuda")
    launches = 1000 if quick else 20000
    for _ in range(100):
        x.add_(1.0)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(launches):
        x.add_(1.0)
    queued = (time.perf_counter() - start) / launches
    torch.cuda.synchronize()
    round_trips = []
    for _ in range(50 if quick else 500):
        begin = time.perf_counter()
        x.add_(1.0)
        torch.cuda.synchronize()
        round_trips.append(time.perf_counter() - begin)
    round_trips.sort()
    return {"launch_s": queued, "launch_sync_s": round_trips[len(round_trips) // 2]}


def transfer_bandwidth(torch: Any, quick: bool) -> dict[str, float]:
    nbytes = (16 if quick else 512) * 1024**2
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    device = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    repeats = 3 if quick else 10
    h2d = _best_event_time(torch, lambda: device.copy_(host, non_blocking=True), repeats)
    d2h = _best_event_time(torch, lambda: host.copy_(device, non_blocking=True), repeats)
    return {"h2d_bytes_per_s": nbytes / h2d, "d2h_bytes_per_s": nbytes / d2h, "transfer_bytes": nbytes}


def probe_gpus(quick: bool) -> dict[str, Any]:
    """Every CUDA device's peaks; status "unavailable" (not an error) when torch sees no GPU."""
    import torch

    if not torch.cuda.is_available():
        return {"status": "unavailable", "reason": "torch sees no CUDA device", "devices": []}
    devices = []
    for index in range(torch.cuda.device_count()):
        with torch.cuda.device(index):
            props = torch.cuda.get_device_properties(index)
            spec = spec_for(props.name)
            devices.append(
                {
                    "index": index,
                    "name": props.name,
                    "capability": f"{props.major}.{props.minor}",
                    "memory_bytes": int(props.total_memory),
                    "multiprocessors": int(props.multi_processor_count),
                    "cuda_runtime": torch.version.cuda,
                    **memory_bandwidth(torch, quick),
                    **matmul_flops(torch, quick),
                    **launch_cost(torch, quick),
                    **transfer_bandwidth(torch, quick),
                    "vendor": spec.to_json() if spec else None,
                }
            )
            torch.cuda.empty_cache()
    return {"devices": devices}
