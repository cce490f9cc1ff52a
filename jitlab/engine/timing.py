"""The measuring recipe run inside a worker: first call, calibration, warm-up, sampling, dispatch.

1. First call (compile + run), synchronised, timed on its own.
2. Calibrate: double the inner loop until one block lasts at least `min_block_s`, so that a sample
   is far above the timer's resolution and the call overhead of the loop.
3. Warm up until two consecutive windows of blocks agree (or the warm-up share of the budget ends).
4. Sample blocks until the 95% CI of the median is within the target, the budget ends, or
   `max_samples` is reached. At least one sample is always taken.
5. For asynchronous backends, also time the dispatch alone (the call returning, before the wait).

Every timed call is followed by the backend's synchronisation inside the timed region: a sample is
the time to a finished result.

On a CUDA device the backend hands over a `BlockTimer` (`jitlab.engine.cuda_timing`) and blocks are
timed the way GPU people time kernels (as `triton.testing.do_bench` does): CUDA events recorded on
the stream around the block, read after the block's result is synchronised, optionally with the L2
cache flushed before every call. On the CPU nothing changes: `perf_counter` around the block, no
GPU machinery on the timing path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from jitlab.engine.spec import TimingPolicy
from jitlab.engine.stats import summarize

clock = time.perf_counter


@dataclass
class TimingResult:
    first_call_s: float
    first_value: Any
    loops: int
    samples_s: list[float]
    warmup_s: list[float]
    dispatch_s: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class BlockTimer(Protocol):
    """Times `loops` calls on a device and returns seconds per call (the result synchronised)."""

    #: how samples were timed, for the record (e.g. "cuda events")
    method: str

    def time_block(self, call: Callable[[], Any], sync: Callable[[Any], None], loops: int) -> float: ...


def _time_block(
    call: Callable[[], Any], sync: Callable[[Any], None], loops: int, timer: BlockTimer | None = None
) -> float:
    if timer is not None:
        return timer.time_block(call, sync, loops)
    start = clock()
    for _ in range(loops):
        sync(call())
    return (clock() - start) / loops


def measure(
    call: Callable[[], Any],
    sync: Callable[[Any], None],
    policy: TimingPolicy,
    asynchronous: bool = False,
    timer: BlockTimer | None = None,
) -> TimingResult:
    """Time `call` by the recipe above. `asynchronous` adds the dispatch-only timing; `timer` (a
    device's event timer) replaces the host clock for the steady-state blocks."""
    start = clock()
    value = call()
    sync(value)
    first = clock() - start

    budget_end = clock() + policy.budget_s
    warnings: list[str] = []

    # calibrate the inner loop
    loops = 1
    per_call = _time_block(call, sync, loops, timer)
    while per_call * loops < policy.min_block_s and clock() < budget_end:
        loops = max(loops * 2, int(np.ceil(policy.min_block_s / max(per_call, 1e-9))))
        per_call = _time_block(call, sync, loops, timer)
    warmup = [per_call]

    # warm up until two consecutive windows agree
    w = policy.settle_window
    warmup_end = min(budget_end, clock() + policy.budget_s * policy.warmup_share)
    settled = False
    while clock() < warmup_end:
        warmup.append(_time_block(call, sync, loops, timer))
        if len(warmup) >= 2 * w:
            recent = float(np.median(warmup[-w:]))
            before = float(np.median(warmup[-2 * w : -w]))
            if abs(recent - before) <= policy.settle_tolerance * before:
                settled = True
                break
    if not settled and len(warmup) >= 2 * w:
        warnings.append("not settled after warm-up")

    # sample
    samples: list[float] = []
    while True:
        samples.append(_time_block(call, sync, loops, timer))
        if len(samples) >= policy.max_samples:
            break
        if clock() >= budget_end:
            break
        if len(samples) >= policy.min_samples and summarize(samples).ci_half_width <= policy.target_ci:
            break
    summary = summarize(samples)
    if summary.ci_half_width > policy.target_ci:
        warnings.append(
            f"CI ±{summary.ci_half_width:.1%} after {len(samples)} samples, target ±{policy.target_ci:.0%} "
            "(raise --budget)"
        )
    if summary.unstable:
        warnings.append(f"unstable: IQR {summary.spread:.0%} of the median")

    dispatch: list[float] = []
    if asynchronous:
        dispatch = _time_dispatch(call, sync, max(policy.budget_s * 0.1, 0.05))
    return TimingResult(first, value, loops, samples, warmup, dispatch, warnings)


def _time_dispatch(call: Callable[[], Any], sync: Callable[[Any], None], budget_s: float) -> list[float]:
    """Time the call alone, then wait outside the timed region, so work never piles up."""
    times: list[float] = []
    end = clock() + budget_s
    while clock() < end or len(times) < 5:
        start = clock()
        value = call()
        times.append(clock() - start)
        sync(value)
        if len(times) >= 200:
            break
    return times
