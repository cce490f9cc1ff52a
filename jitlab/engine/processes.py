"""One cell from several worker processes: merging their results into the cell's result, and
refusing to pool processes that disagree.

Pooling is only honest when every process measured the same thing. Two ways it is not:

- the first call fails (or crashes, or hangs) in one process but not in another;
- the results differ from one process to the next by more than the workload's stated error (its
  `expected_error` at this size; without one, 1e-5 relative to the value, or 1e-5 of the error
  metric for array results), compared on seed 0, which every process computes.

Either makes the cell `inconsistent`: it keeps every sample and process record (nothing is lost),
says which process disagreed and how, and is left out of comparisons like a failed cell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from jitlab.engine.slow_spells import slow_warnings
from jitlab.engine.timing import CI_WARNING_PREFIX, relative_width
from jitlab.stats.summary import summarize
from jitlab.store.records import PARTIAL_WARNING

#: the status of a cell whose processes disagree
INCONSISTENT = "inconsistent"
#: relative tolerance between processes' results when the workload states no error of its own
DEFAULT_RELATIVE_TOLERANCE = 1e-5
#: jitlab's own cost per call above this share of the median earns the cell a warning
OVERHEAD_WARNING_SHARE = 0.01


def process_record(result: dict[str, Any]) -> dict[str, Any]:
    """What is kept of one process: enough to see how it differed from the others."""
    samples = result.get("samples_s") or []
    values = result.get("values") or []
    errors = result.get("errors") or []
    return {
        "process": result.get("process", 0),
        "status": result.get("status"),
        "reason": result.get("reason"),
        "startup_s": result.get("startup_s"),
        "first_call_s": result.get("first_call_s"),
        "loops": result.get("loops"),
        "samples": len(samples),
        "median_s": float(sorted(samples)[len(samples) // 2]) if samples else None,
        "value": values[0] if values else None,
        "error": errors[0] if errors else None,
        "harness_overhead_s": result.get("harness_overhead_s"),
        "timing_method": result.get("timing_method"),
        "peak_rss_bytes": result.get("peak_rss_bytes"),
        "warnings": [w for w in result.get("warnings") or [] if not w.startswith(CI_WARNING_PREFIX)],
        "wall_s": result.get("wall_s"),
        "round": result.get("round"),
        "canary": result.get("canary"),
        "load": result.get("load"),
        "slow_spell": result.get("slow_spell"),
        "replaced_by": result.get("replaced_by"),
        "again": result.get("again"),
        "instructions": float(sorted(result["instructions"])[len(result["instructions"]) // 2])
        if result.get("instructions")
        else None,
    }


def pooled(results: Sequence[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The processes whose samples make the cell's figure, with their index: those that succeeded,
    less those measured in a slow spell and measured again on a quiet machine (replaced)."""
    return [(k, r) for k, r in enumerate(results) if r.get("status") == "ok" and r.get("replaced_by") is None]


def merge_process_results(
    results: Sequence[dict[str, Any]], target_ci: float = 0.02, requested: int = 1, pending: int = 0
) -> dict[str, Any]:
    """The cell's result from its processes' results, process 0 first.

    A failed process 0 is the cell's failure, as with one process. Otherwise the samples are pooled
    with the index of the process each came from (`sample_process`), the error over seeds and the
    dispatch times are process 0's, peak memory is the largest, and `process_details` keeps one
    record per process. Processes that disagree make the cell `inconsistent` (see the module docstring).
    `requested` is the number of processes asked for (`--processes`): fewer earn a warning saying why.
    `pending`: processes planned but not measured yet (a run in rounds stores its cells after every
    round); such a cell has `pending_processes` (and says so in a `PARTIAL_WARNING`), and `jitlab run
    --resume` measures it again.
    """
    first = dict(results[0])
    records = [process_record(r) for r in results]
    if first.get("status") != "ok":
        first["process_details"] = records
        return first
    merged = dict(first)
    samples: list[float] = []
    sample_process: list[int] = []
    cpu_samples: list[float] = []
    instructions: list[float] = []
    instruction_process: list[int] = []
    for k, result in pooled(results):
        samples += list(result.get("samples_s") or [])
        sample_process += [k] * len(result.get("samples_s") or [])
        cpu = list(result.get("cpu_samples_s") or [])
        cpu_samples += cpu if len(cpu) == len(result.get("samples_s") or []) else []
        counted = list(result.get("instructions") or [])
        instructions += counted
        instruction_process += [k] * len(counted)
    merged["samples_s"] = samples
    merged["sample_process"] = sample_process
    # CPU time only when every pooled process has it for every sample (parallel to `samples_s`)
    merged["cpu_samples_s"] = cpu_samples if len(cpu_samples) == len(samples) else []
    merged["instructions"] = instructions
    merged["instruction_process"] = instruction_process
    merged["process_details"] = records
    merged["peak_rss_bytes"] = max((r.get("peak_rss_bytes") or 0 for r in results), default=None) or None
    device_peaks = [r["peak_device_bytes"] for r in results if r.get("peak_device_bytes") is not None]
    merged["peak_device_bytes"] = max(device_peaks) if device_peaks else None
    merged["warnings"] = _warnings(results, samples, sample_process, target_ci) + slow_warnings(results)
    shortfall = None if pending else _fewer_processes(results, requested)
    if shortfall:
        merged["warnings"].append(shortfall)
    merged["pending_processes"] = pending
    if pending:
        merged["warnings"].append(
            f"{PARTIAL_WARNING}{len(results)} of {len(results) + pending} planned processes measured so far"
        )

    problems = failed_processes(results) + differing_results(results)
    if problems:
        merged["status"] = INCONSISTENT
        merged["reason"] = (
            "; ".join(problems) + ": the workload does not behave the same in every process, so its "
            "samples are not pooled into one figure"
        )
        logs = [
            r.get("log") or r.get("traceback")
            for r in results[1:]
            if r.get("status") != "ok" and (r.get("log") or r.get("traceback"))
        ]
        if logs:
            merged["log"] = logs[0]
    return merged


def _fewer_processes(results: Sequence[dict[str, Any]], requested: int) -> str | None:
    first = results[0]
    planned = int(first.get("processes_planned") or 1)
    if len(results) < planned:
        return (
            f"{len(results)} of {planned} planned processes: the extra ones took longer than planned "
            "(the budget pays for their start-up; raise --budget)"
        )
    if planned < requested:
        startup = first.get("startup_s")
        why = f"start-up {startup:.1f} s and " if startup else ""
        return (
            f"{planned} of {requested} processes: {why}a block of {(first.get('loops') or 1) * _median(first):.3g} s "
            "leave no budget for more (raise --budget for a noise floor)"
        )
    return None


def _median(result: dict[str, Any]) -> float:
    samples = sorted(result.get("samples_s") or [0.0])
    return samples[len(samples) // 2]


def failed_processes(results: Sequence[dict[str, Any]]) -> list[str]:
    """'process 2 of 3 failed: ValueError: ...' for each later process that did not finish."""
    total = len(results)
    return [
        f"process {k} of {total} {result.get('status')}: {result.get('reason') or 'no reason given'} "
        "(process 0 succeeded)"
        for k, result in enumerate(results)
        if k > 0 and result.get("status") != "ok"
    ]


def differing_results(results: Sequence[dict[str, Any]]) -> list[str]:
    """Seed 0's result of each later process against process 0's, beyond the stated error."""
    first = results[0]
    stated = first.get("expected_error")
    problems = []
    for k, result in enumerate(results):
        if k == 0 or result.get("status") != "ok":
            continue
        mismatch = _seed0_mismatch(first, result, stated)
        if mismatch:
            problems.append(f"process {k} {mismatch}")
    return problems


def _seed0_mismatch(first: dict[str, Any], other: dict[str, Any], stated: float | None) -> str | None:
    value_0 = _first(first.get("values"))
    value_k = _first(other.get("values"))
    if value_0 is not None and value_k is not None:
        tolerance = stated if stated else DEFAULT_RELATIVE_TOLERANCE * max(abs(value_0), 1e-300)
        if not abs(value_k - value_0) <= tolerance:  # `not <=` so a NaN counts as a difference
            return f"gave {value_k:.10g} for seed 0 where process 0 gave {value_0:.10g} (tolerance {tolerance:.2g})"
        return None
    error_0 = _first(first.get("errors"))
    error_k = _first(other.get("errors"))
    if error_0 is not None and error_k is not None:
        tolerance = stated if stated else DEFAULT_RELATIVE_TOLERANCE
        if not abs(error_k - error_0) <= tolerance:
            return (
                f"had an error of {error_k:.3g} for seed 0 where process 0 had {error_0:.3g} "
                f"(tolerance {tolerance:.2g})"
            )
    return None


def _first(values: Sequence[Any] | None) -> float | None:
    if not values or values[0] is None:
        return None
    try:
        return float(values[0])
    except (TypeError, ValueError):
        return None


def _warnings(
    results: Sequence[dict[str, Any]], samples: list[float], sample_process: list[int], target_ci: float
) -> list[str]:
    """Process 0's warnings, later processes' warnings labelled with their process (unless process 0
    gave the same one), and the cell's own: its CI (which counts the processes) against the target,
    and jitlab's overhead per call."""
    warnings: list[str] = []
    first = set(results[0].get("warnings") or [])
    for k, result in enumerate(results):
        for warning in result.get("warnings") or []:
            if len(results) > 1 and warning.startswith(CI_WARNING_PREFIX):
                continue  # replaced by the cell's CI below
            if k > 0 and warning in first:
                continue  # the same in every process (e.g. an option that does not apply here)
            warnings.append(warning if k == 0 else f"process {k}: {warning}")
    if len(results) > 1 and samples:
        summary = summarize(samples, sample_process=sample_process)
        if summary.processes > 1 and summary.ci_half_width > target_ci:
            warnings.append(
                f"{CI_WARNING_PREFIX}{relative_width(summary.ci_half_width)} after {len(samples)} samples in "
                f"{summary.processes} processes, target ±{target_ci:.0%} (the spread between processes "
                "counts: raise --processes or --budget)"
            )
    overheads = [r["harness_overhead_s"] for r in results if r.get("harness_overhead_s") is not None]
    if overheads and samples:
        overhead = sorted(overheads)[len(overheads) // 2]
        median = sorted(samples)[len(samples) // 2]
        if median > 0 and overhead > OVERHEAD_WARNING_SHARE * median and math.isfinite(overhead):
            warnings.append(
                f"jitlab's own cost per call ({overhead * 1e9:.0f} ns) is {overhead / median:.1%} of the "
                "median: time more work per call"
            )
    return warnings
