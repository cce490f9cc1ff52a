"""The worker process: measures one cell and writes its result as JSON.

Run as `python -m jitlab.engine.worker SPEC.json RESULT.json` by the parent (`jitlab.engine.runner`),
with the backend's environment (threads, interpreter switches, fresh compiler caches) already set.
Each cell gets fresh processes so frameworks never meet (TensorFlow and Triton abort in one process)
and the first call is a true cold start.

A cell is measured in several processes one after another; `JITLAB_PROCESS_INDEX` says which one
this is. Process 0 makes the cold first call, decides how many processes the cell gets, measures
the error over every seed and the dispatch time. Later processes (which find the compiler caches
process 0 filled) sample the steady state with their own warm-up and compute seed 0 only, whose
result the parent compares with process 0's.

`python -m jitlab.engine.worker --probe BACKEND RESULT.json` reports a backend's version and devices,
for `jitlab backends`, again one process per backend.

Once its result file is written, a worker leaves at once (`leave_now`), without the interpreter's
teardown: nothing of the cell is left to do, and a framework's shutdown (TensorFlow and
torch.compile take about a second on a 2-core machine, torch a third of one) would otherwise be
paid by every worker process of every cell. The parent kills whatever the worker leaves behind in
its process group (a compiler's worker pool, say).
"""

from __future__ import annotations

import functools
import json
import os
import resource
import sys
import time
import traceback
from typing import Any, NoReturn

from jitlab.backends import get_backend
from jitlab.engine.counting import CountResult, count_instructions
from jitlab.engine.spec import INSTRUCTIONS, LAUNCHED_AT_ENV, PROCESS_INDEX_ENV, CellSpec
from jitlab.engine.timing import BlockTimer, TimingResult, harness_overhead_s, measure
from jitlab.lifeline import hold_lifeline, release_lifeline
from jitlab.workloads.api import Case
from jitlab.workloads.registry import find_workload

RESULT_VERSION = 1
#: the timing method of a cell whose calls were counted under Valgrind
COUNTED_METHOD = "instructions (callgrind)"
#: seeds always measured for the error, whatever the budget: one seed says nothing about spread
MIN_SEEDS = 3


def process_index() -> int:
    return int(os.environ.get(PROCESS_INDEX_ENV, "0") or 0)


def peak_rss_bytes() -> int:
    # ru_maxrss is in KiB on Linux
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def seconds_since_start() -> float:
    """How long since the parent started this process: interpreter start, imports, building the
    workload. An extra process of the cell would take as long before its first call. (The parent's
    launch time, not the kernel's process start time: the latter is rounded to boot-time seconds.)"""
    try:
        return max(0.0, time.time() - float(os.environ[LAUNCHED_AT_ENV]))
    except (KeyError, ValueError):
        return 0.0


def _scalar(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def measure_cell(spec: CellSpec) -> dict[str, Any]:
    workload = find_workload(spec.workload, spec.source_file)  # first: its file may register the backend
    backend = get_backend(spec.backend)
    backend.configure(spec.threads)
    index = process_index()
    prepared = workload.build(backend, spec.size, spec.params)
    args0 = prepared.args(0)
    call = functools.partial(prepared.fn, *args0)
    # every process of the cell times its blocks the same way: its own CUDA-event timer on a CUDA
    # device (and its own L2-flush buffer), the host clock elsewhere
    timer, timer_notes = device_timer(backend, workload, spec)
    backend.reset_peak_device_memory()  # the peak of this cell's work, inputs included
    # dispatch means something for one call that returns early, not for a loop of many calls
    asynchronous = backend.asynchronous and workload.dispatch_meaningful
    startup = seconds_since_start()
    counted: CountResult | None = None
    if spec.policy.measure == INSTRUCTIONS:  # under Callgrind: count, do not time
        counted = count_instructions(call, backend.synchronize)
        timing = TimingResult(
            None, counted.first_value, counted.calls_per_block, [], [], [], counted.warnings
        )
        timing.processes = max(1, spec.policy.processes)
        overhead = None
    else:
        # dispatch alone is timed in the first process only
        timing = measure(
            call,
            backend.synchronize,
            spec.policy,
            asynchronous,
            time_dispatch=index == 0,
            startup_s=startup,
            timer=timer,
        )
        timing.warnings.extend(timer_notes)
        overhead = harness_overhead_s(call, backend.synchronize, timing.first_value, asynchronous)

    # accuracy over several seeds; seed 0 is the first call's result (later processes: seed 0 only)
    params = {**workload.params, **spec.params}
    accuracy_start = time.perf_counter()
    values: list[Any] = [backend.to_host(timing.first_value)]
    for seed in range(1, workload.seeds if index == 0 else 1):
        if seed >= MIN_SEEDS and time.perf_counter() - accuracy_start > spec.policy.budget_s:
            timing.warnings.append(f"error from {seed} seeds only (budget)")
            break
        args = prepared.args(seed)
        out = prepared.fn(*args)
        values.append(backend.to_host(out))

    errors: list[float] = []
    extras: dict[str, list[float]] = {name: [] for name in workload.extra_metrics}
    references: list[Any] = []
    if workload.reference is not None:
        for seed, value in enumerate(values):
            case = Case(spec.size, seed, params)
            ref = workload.reference_value(case, tuple(workload.inputs(case)) if workload.inputs else ())
            references.append(_scalar(ref))
            errors.append(float(workload.error(value, ref)))
            for name, metric in workload.extra_metrics.items():
                extras[name].append(float(metric(value, ref)))

    return {
        "status": "ok",
        "reason": None,
        "first_call_s": timing.first_call_s,
        "loops": timing.loops,
        "samples_s": timing.samples_s,
        "cpu_samples_s": timing.cpu_samples_s if cpu_time_applies(spec) else [],
        "load": timing.load.to_json() if timing.load else None,
        "warmup_s": timing.warmup_s,
        "dispatch_s": timing.dispatch_s,
        "values": [_scalar(v) for v in values],
        "references": references,
        "errors": errors,
        "extras": extras,
        "expected_error": workload.expected_error(spec.size) if workload.expected_error else None,
        "warnings": timing.warnings,
        "peak_rss_bytes": peak_rss_bytes(),
        "peak_device_bytes": _peak_device_bytes(backend, timer),
        "device": backend.device_description(),
        "backend_version": backend.version(),
        "threads": spec.threads,
        "asynchronous": backend.asynchronous,
        "timing_method": COUNTED_METHOD if counted else timer.method if timer is not None else "host clock",
        "instructions": counted.per_call if counted else [],
        "process": index,
        "processes_planned": timing.processes,
        "startup_s": startup,
        "sampling_share_s": timing.share_s,
        "harness_overhead_s": overhead,
    }


#: backends whose work runs in the calling thread whatever --threads says
ONE_THREAD_BACKENDS = frozenset({"python", "numba"})


def cpu_time_applies(spec: CellSpec) -> bool:
    """A cell's CPU time per call means its work (and is kept beside the wall time) when its backend
    runs one thread: then a preempted process keeps its CPU time while its wall time grows. With
    several threads CPU time adds the threads up, and idle pools spin."""
    return spec.threads == 1 or spec.backend in ONE_THREAD_BACKENDS


def _peak_device_bytes(backend: Any, timer: Any) -> int | None:
    peak = backend.peak_device_memory()
    if peak is None or timer is None:
        return peak
    return max(peak - getattr(timer, "own_device_bytes", 0), 0)


def device_timer(backend: Any, workload: Any, spec: CellSpec) -> tuple[BlockTimer | None, list[str]]:
    """CUDA events for backends computing on a CUDA device (None, the host clock, elsewhere), and
    notes for the cell's warnings."""
    flush = bool(spec.policy.flush_l2 or workload.flush_l2)
    device = backend.cuda_event_device() if workload.device_timing else None
    if device is None:
        return None, (["L2 flush requested but not a CUDA device: ignored"] if flush else [])
    from jitlab.engine.cuda_timing import CudaEventTimer

    return CudaEventTimer(device, flush_l2=flush), []


def probe(backend_name: str) -> dict[str, Any]:
    backend = get_backend(backend_name)
    return {"version": backend.version(), "devices": backend.devices(), "asynchronous": backend.asynchronous}


def _failure(exc: BaseException) -> dict[str, Any]:
    return {
        "status": "failed",
        "reason": f"{type(exc).__name__}: {exc}".strip(),
        "traceback": traceback.format_exc(),
        "peak_rss_bytes": peak_rss_bytes(),
        "process": process_index(),
    }


def main(argv: list[str]) -> int:
    if argv[0] == "--probe":
        backend_name, result_path = argv[1], argv[2]
        try:
            result = {"status": "ok", **probe(backend_name)}
        except Exception as exc:
            result = _failure(exc)
    else:
        spec_path, result_path = argv
        with open(spec_path) as f:
            spec = CellSpec.from_json(json.load(f))
        try:
            result = measure_cell(spec)
        except Exception as exc:
            result = _failure(exc)
    result["result_version"] = RESULT_VERSION
    with open(result_path, "w") as f:
        json.dump(result, f)
    return 0


def leave_now(code: int) -> NoReturn:
    """Exit with `code` after flushing the worker's output, skipping atexit handlers, finalizers
    and framework shutdown (see the module docstring). Only for a worker whose result is written."""
    release_lifeline()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    hold_lifeline()  # dies with its parent, even one killed by SIGKILL (jitlab.lifeline)
    leave_now(main(sys.argv[1:]))
