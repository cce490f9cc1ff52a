"""The measuring recipe run inside a worker: first call, calibration, warm-up, sampling, dispatch.

1. First call (compile + run), synchronised, timed on its own.
2. Calibrate: double the inner loop until one block lasts at least `min_block_s`, so that a sample
   is far above the timer's resolution and the call overhead of the loop. When the cell is measured
   in several worker processes (`policy.processes`), decide now how many fit into the budget
   (`planned_processes`): this process gets an equal share of it.
3. Warm up until two consecutive windows of blocks agree (or the warm-up share of the budget ends).
4. Sample blocks until the 95% CI of the median is within the target, the budget ends, or
   `max_samples` is reached. At least one sample is always taken.
5. For asynchronous backends, also time the dispatch alone (the call returning, before the wait).

Every timed call is followed by the backend's synchronisation inside the timed region: a sample is
the time to a finished result. A synchronous backend whose result is a plain Python or NumPy value
has nothing to wait for; its block loop then calls the function directly, ten calls per loop turn,
so that jitlab's own cost per call (`harness_overhead_s`) stays at a few nanoseconds.

On a CUDA device the backend hands over a `BlockTimer` (`jitlab.engine.cuda_timing`) and blocks are
timed the way GPU people time kernels (as `triton.testing.do_bench` does): CUDA events recorded on
the stream around the block, read after the block's result is synchronised, optionally with the L2
cache flushed before every call. On the CPU nothing changes: `perf_counter` around the block, no
GPU machinery on the timing path. Each worker process of a cell builds its own timer, so every
process's samples are timed the same way. The budget, the process plan and the warm-up window are
always host seconds.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Protocol

import numpy as np

from jitlab.engine.load import Load, load_between, snapshot
from jitlab.engine.spec import TimingPolicy
from jitlab.stats.summary import summarize

clock = time.perf_counter

#: a process must have room for this many blocks (calibration, warm-up, samples) in its budget share
MIN_BLOCKS_PER_PROCESS = 5
#: the warning a process gives when its CI missed the target (the parent replaces it for a cell
#: measured in several processes, whose CI counts the processes)
CI_WARNING_PREFIX = "CI ±"


@dataclass
class TimingResult:
    first_call_s: float | None
    first_value: Any
    loops: int
    samples_s: list[float]
    warmup_s: list[float]
    dispatch_s: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: worker processes the cell gets (`planned_processes`), and each one's seconds of sampling
    processes: int = 1
    share_s: float | None = None
    #: CPU seconds of this process per call in each sample (`samples_s`'s blocks): a process that
    #: was preempted keeps its CPU time, so beside the wall time it shows what load added
    cpu_samples_s: list[float] = field(default_factory=list)
    #: how busy the machine was while the samples were taken (`jitlab.engine.load`)
    load: Load | None = None


def relative_width(width: float) -> str:
    """A CI's half-width as a percentage, or a word where it is as wide as the value itself."""
    return f"{width:.1%}" if width < 1 else "(wider than the median itself)"


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


def _time_host_block(fn: Callable[..., Any], args: tuple, loops: int) -> float:
    """A block of calls that return finished host values: no synchronisation, no wrapper, ten calls
    per loop turn (the loop's own cost is spread over ten calls)."""
    start = clock()
    for _ in repeat(None, loops // 10):
        fn(*args)
        fn(*args)
        fn(*args)
        fn(*args)
        fn(*args)
        fn(*args)
        fn(*args)
        fn(*args)
        fn(*args)
        fn(*args)
    for _ in repeat(None, loops % 10):
        fn(*args)
    return (clock() - start) / loops


def _unwrap(call: Callable[[], Any]) -> tuple[Callable[..., Any], tuple]:
    """`functools.partial(fn, *args)` as (fn, args), so the block loop calls fn without the wrapper."""
    if isinstance(call, functools.partial) and not call.keywords:
        return call.func, call.args
    return call, ()


def finished_on_return(value: Any) -> bool:
    """A plain Python or NumPy value (possibly in tuples, lists, dicts) exists when the call returns:
    a synchronous backend has nothing to wait for."""
    if isinstance(value, (tuple, list)):
        return all(finished_on_return(v) for v in value)
    if isinstance(value, dict):
        return all(finished_on_return(v) for v in value.values())
    return type(value).__module__ in ("builtins", "numpy")


def planned_processes(policy: TimingPolicy, block_s: float, startup_s: float = 0.0) -> int:
    """How many worker processes a cell gets: at most `policy.processes`, as many as its budget pays
    for. The budget covers the sampling of every process and (`policy.startup_in_budget`) the
    start-up of the extra ones (imports and building the workload: `startup_s`, as process 0 took),
    and each process's share must hold `MIN_BLOCKS_PER_PROCESS` blocks. So a 2-second call in a
    5-second budget gets one process, not three of one sample each, and a framework that takes 4 s
    to import gets two."""
    count = 1
    for p in range(2, max(policy.processes, 1) + 1):
        if process_share(policy, p, block_s, startup_s) < MIN_BLOCKS_PER_PROCESS * max(
            block_s, policy.min_block_s
        ):
            break
        count = p
    return count


def process_target_ci(target_ci: float, processes: int) -> float:
    """The stopping target of each of a cell's processes: pooling `processes` processes narrows the
    within-process part of the cell's interval by about sqrt(processes)."""
    return target_ci * math.sqrt(processes)


def process_share(policy: TimingPolicy, processes: int, block_s: float, startup_s: float) -> float:
    """Sampling seconds of each of `processes` processes: the budget less the extra processes'
    start-up (each estimated as process 0's plus one block), shared equally."""
    startups = (processes - 1) * (startup_s + block_s) if policy.startup_in_budget else 0.0
    return (policy.budget_s - startups) / processes


def measure(
    call: Callable[[], Any],
    sync: Callable[[Any], None],
    policy: TimingPolicy,
    asynchronous: bool = False,
    time_dispatch: bool = True,
    startup_s: float = 0.0,
    timer: BlockTimer | None = None,
) -> TimingResult:
    """Time `call` by the recipe above. `asynchronous` adds the dispatch-only timing (unless
    `time_dispatch` is False); `timer` (a device's event timer) replaces the host clock for the
    blocks. `startup_s`: how long this process took to get here (imports, building the workload),
    which each extra process of the cell would take too, with its own first call; it decides how
    many processes the budget pays for (`planned_processes`)."""
    start = clock()
    value = call()
    sync(value)
    first = clock() - start

    sampling_start = clock()
    budget_end = sampling_start + policy.budget_s
    warnings: list[str] = []
    if timer is None and not asynchronous and finished_on_return(value):
        fn, args = _unwrap(call)

        def block(loops: int) -> float:
            return _time_host_block(fn, args, loops)
    else:

        def block(loops: int) -> float:
            return _time_block(call, sync, loops, timer)

    # calibrate the inner loop
    # (the budget is host time, so the plan below uses a block's host cost: with a device timer it
    # also holds the launches and an L2 flush per call, which the events leave out)
    loops = 1
    started = clock()
    per_call = block(loops)
    host_block_s = clock() - started
    while per_call * loops < policy.min_block_s and clock() < budget_end:
        loops = max(loops * 2, int(np.ceil(policy.min_block_s / max(per_call, 1e-9))))
        started = clock()
        per_call = block(loops)
        host_block_s = clock() - started
    warmup = [per_call]

    # this process's share of the budget, once a block's cost is known; an extra process pays the
    # start-up and the first call again (numba compiles again, Inductor from a warm cache at best),
    # so both count as its start-up
    extra_startup_s = startup_s + first
    processes = planned_processes(policy, host_block_s, extra_startup_s)
    share_s = (
        process_share(policy, processes, host_block_s, extra_startup_s) if processes > 1 else policy.budget_s
    )
    budget_end = min(budget_end, sampling_start + share_s)
    # the cell pools its processes' samples, so each process needs less precision on its own
    target_ci = process_target_ci(policy.target_ci, processes)

    # warm up until two consecutive windows agree
    w = policy.settle_window
    warmup_end = min(budget_end, clock() + share_s * policy.warmup_share)
    settled = False
    # (a block that would end far past the window is not started: the calibration block warmed up)
    while clock() + 0.5 * host_block_s < warmup_end:
        warmup.append(block(loops))
        if len(warmup) >= 2 * w:
            recent = float(np.median(warmup[-w:]))
            before = float(np.median(warmup[-2 * w : -w]))
            if abs(recent - before) <= policy.settle_tolerance * before:
                settled = True
                break
    if not settled and len(warmup) >= 2 * w:
        warnings.append("not settled after warm-up")

    # sample, with each block's CPU time beside its wall time
    samples: list[float] = []
    cpu_samples: list[float] = []
    cpu_clock = time.process_time
    before = snapshot()
    while True:
        cpu_start = cpu_clock()
        samples.append(block(loops))
        cpu_samples.append((cpu_clock() - cpu_start) / loops)
        if len(samples) >= policy.max_samples:
            break
        if clock() >= budget_end:
            break
        if len(samples) >= policy.min_samples and summarize(samples).ci_half_width <= target_ci:
            break
    load = load_between(before, snapshot())
    summary = summarize(samples)
    if summary.ci_half_width > target_ci:
        warnings.append(
            f"{CI_WARNING_PREFIX}{relative_width(summary.ci_half_width)} after {len(samples)} samples, "
            f"target ±{target_ci:.1%} (raise --budget)"
        )
    if summary.unstable:
        spread = f"{summary.spread:.0%} of" if summary.spread < 1 else "wider than"
        warnings.append(f"unstable: IQR {spread} the median")

    dispatch: list[float] = []
    if asynchronous and time_dispatch:
        dispatch = _time_dispatch(call, sync, max(policy.budget_s * 0.1, 0.05))
    return TimingResult(
        first, value, loops, samples, warmup, dispatch, warnings, processes, share_s, cpu_samples, load
    )


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


def _do_nothing(*args: Any) -> None:
    return None


#: seconds one block of the overhead measurement lasts (seven blocks, twice): a few tens of ms in all
_OVERHEAD_BLOCK_S = 0.002


def harness_overhead_s(
    call: Callable[[], Any], sync: Callable[[Any], None], value: Any, asynchronous: bool = False
) -> float:
    """jitlab's own cost per timed call: the block loop (and the wait, where there is one) around a
    function that does nothing with the same arguments, minus calling that function directly. The
    smallest of several blocks, as overhead only ever adds time. Blocks are sized by time, so a
    costly wait (a large result read back to the host) keeps this short."""
    fn, args = _unwrap(call)
    repeats = 7
    if not asynchronous and finished_on_return(value):

        def engine_block(loops: int) -> float:
            return _time_host_block(_do_nothing, args, loops)
    else:

        def returns_value(*_: Any) -> Any:
            return value

        noop = functools.partial(returns_value, *args)

        def engine_block(loops: int) -> float:
            return _time_block(noop, sync, loops)

    loops = max(20, min(2000, int(_OVERHEAD_BLOCK_S / max(engine_block(20), 1e-9))))
    engine = min(engine_block(loops) for _ in range(repeats))
    direct = min(_time_direct(_do_nothing, args, loops) for _ in range(repeats))
    return max(0.0, engine - direct)


def _time_direct(fn: Callable[..., Any], args: tuple, loops: int) -> float:
    """Calls written out one after another, twenty per loop turn: the cost of the call itself."""
    turns = max(1, loops // 20)
    start = clock()
    for _ in repeat(None, turns):
        # fmt: off
        fn(*args); fn(*args); fn(*args); fn(*args); fn(*args); fn(*args); fn(*args); fn(*args); fn(*args); fn(*args)  # noqa: E702
        fn(*args); fn(*args); fn(*args); fn(*args); fn(*args); fn(*args); fn(*args); fn(*args); fn(*args); fn(*args)  # noqa: E702
        # fmt: on
    return (clock() - start) / (turns * 20)
