"""The worker process: measures one cell and writes its result as JSON.

Run as `python -m jitlab.engine.worker SPEC.json RESULT.json` by the parent (`jitlab.engine.runner`),
with the backend's environment (threads, interpreter switches, fresh compiler caches) already set.
Each cell gets a fresh process so frameworks never meet (TensorFlow and Triton abort in one process)
and the first call is a true cold start.

`python -m jitlab.engine.worker --probe BACKEND RESULT.json` reports a backend's version and devices,
for `jitlab backends`, again one process per backend.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import traceback
from typing import Any

from jitlab.backends import get_backend
from jitlab.engine.spec import CellSpec
from jitlab.engine.timing import BlockTimer, measure
from jitlab.workloads.api import Case
from jitlab.workloads.registry import find_workload

RESULT_VERSION = 1
#: seeds always measured for the error, whatever the budget: one seed says nothing about spread
MIN_SEEDS = 3


def peak_rss_bytes() -> int:
    # ru_maxrss is in KiB on Linux
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _scalar(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def measure_cell(spec: CellSpec) -> dict[str, Any]:
    workload = find_workload(spec.workload, spec.source_file)  # first: its file may register the backend
    backend = get_backend(spec.backend)
    backend.configure(spec.threads)
    prepared = workload.build(backend, spec.size, spec.params)
    args0 = prepared.args(0)
    timer, timer_notes = device_timer(backend, workload, spec)
    backend.reset_peak_device_memory()  # the peak of this cell's work, inputs included
    # dispatch means something for one call that returns early, not for a loop of many calls
    asynchronous = backend.asynchronous and workload.dispatch_meaningful
    timing = measure(lambda: prepared.fn(*args0), backend.synchronize, spec.policy, asynchronous, timer)
    timing.warnings.extend(timer_notes)

    # accuracy over several seeds; seed 0 is the first call's result
    params = {**workload.params, **spec.params}
    accuracy_start = time.perf_counter()
    values: list[Any] = [backend.to_host(timing.first_value)]
    for seed in range(1, workload.seeds):
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
        "timing_method": timer.method if timer is not None else "host clock",
    }


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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
