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
from jitlab.process_result import CellResult, ProcessResult
from jitlab.stats.summary import summarize
from jitlab.store.records import PARTIAL_WARNING

#: the status of a cell whose processes disagree
INCONSISTENT = "inconsistent"
#: relative tolerance between processes' results when the workload states no error of its own
DEFAULT_RELATIVE_TOLERANCE = 1e-5
#: jitlab's own cost per call above this share of the median earns the cell a warning
OVERHEAD_WARNING_SHARE = 0.01


def process_record(result: ProcessResult) -> dict[str, Any]:
    """What is kept of one process (stored with the cell): enough to see how it differed from the
    others."""
    samples = result.samples_s
    instructions = result.instructions
    return {
        "process": result.process,
        "status": result.status,
        "reason": result.reason,
        "startup_s": result.startup_s,
        "first_call_s": result.first_call_s,
        "loops": result.loops,
        "samples": len(samples),
        "median_s": float(sorted(samples)[len(samples) // 2]) if samples else None,
        "value": result.values[0] if result.values else None,
        "error": result.errors[0] if result.errors else None,
        "harness_overhead_s": result.harness_overhead_s,
        "timing_method": result.timing_method,
        "peak_rss_bytes": result.peak_rss_bytes,
        "warnings": [w for w in result.warnings if not w.startswith(CI_WARNING_PREFIX)],
        "wall_s": result.wall_s,
        "round": result.round,
        "canary": result.canary,
        "load": result.load,
        "slow_spell": result.slow_spell,
        "replaced_by": result.replaced_by,
        "again": result.again,
        "instructions": float(sorted(instructions)[len(instructions) // 2]) if instructions else None,
    }


def pooled(results: Sequence[ProcessResult]) -> list[tuple[int, ProcessResult]]:
    """The processes whose samples make the cell's figure, with their index: those that succeeded,
    less those measured in a slow spell and measured again on a quiet machine (replaced)."""
    return [(k, r) for k, r in enumerate(results) if r.ok and r.replaced_by is None]


def merge_process_results(
    results: Sequence[ProcessResult], target_ci: float = 0.02, requested: int = 1, pending: int = 0
) -> CellResult:
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
    first = results[0]
    records = tuple(process_record(r) for r in results)
    if not first.ok:
        return CellResult.of_process(first, process_details=records)
    samples: list[float] = []
    sample_process: list[int] = []
    cpu_samples: list[float] = []
    instructions: list[float] = []
    instruction_process: list[int] = []
    for k, result in pooled(results):
        samples += result.samples_s
        sample_process += [k] * len(result.samples_s)
        cpu = list(result.cpu_samples_s)
        cpu_samples += cpu if len(cpu) == len(result.samples_s) else []
        instructions += result.instructions
        instruction_process += [k] * len(result.instructions)
    warnings = _warnings(results, samples, sample_process, target_ci) + slow_warnings(results)
    shortfall = None if pending else _fewer_processes(results, requested)
    if shortfall:
        warnings.append(shortfall)
    if pending:
        warnings.append(
            f"{PARTIAL_WARNING}{len(results)} of {len(results) + pending} planned processes measured so far"
        )
    device_peaks = [r.peak_device_bytes for r in results if r.peak_device_bytes is not None]
    status, reason, log = first.status, first.reason, first.log
    problems = failed_processes(results) + differing_results(results)
    if problems:
        status = INCONSISTENT
        reason = (
            "; ".join(problems) + ": the workload does not behave the same in every process, so its "
            "samples are not pooled into one figure"
        )
        logs = [r.log or r.traceback for r in results[1:] if not r.ok and (r.log or r.traceback)]
        if logs:
            log = logs[0]
    return CellResult.of_process(
        first,
        status=status,
        reason=reason,
        log=log,
        samples_s=tuple(samples),
        sample_process=tuple(sample_process),
        # CPU time only when every pooled process has it for every sample (parallel to `samples_s`)
        cpu_samples_s=tuple(cpu_samples) if len(cpu_samples) == len(samples) else (),
        instructions=tuple(instructions),
        instruction_process=tuple(instruction_process),
        process_details=records,
        peak_rss_bytes=max((r.peak_rss_bytes or 0 for r in results), default=None) or None,
        peak_device_bytes=max(device_peaks) if device_peaks else None,
        warnings=tuple(warnings),
        pending_processes=pending,
    )


def _fewer_processes(results: Sequence[ProcessResult], requested: int) -> str | None:
    first = results[0]
    planned = int(first.processes_planned or 1)
    if len(results) < planned:
        return (
            f"{len(results)} of {planned} planned processes: the extra ones took longer than planned "
            "(the budget pays for their start-up; raise --budget)"
        )
    if planned < requested:
        startup = first.startup_s
        why = f"start-up {startup:.1f} s and " if startup else ""
        return (
            f"{planned} of {requested} processes: {why}a block of {(first.loops or 1) * _median(first):.3g} s "
            "leave no budget for more (raise --budget for a noise floor)"
        )
    return None


def _median(result: ProcessResult) -> float:
    samples = sorted(result.samples_s or [0.0])
    return samples[len(samples) // 2]


def failed_processes(results: Sequence[ProcessResult]) -> list[str]:
    """'process 2 of 3 failed: ValueError: ...' for each later process that did not finish."""
    total = len(results)
    return [
        f"process {k} of {total} {result.status}: {result.reason or 'no reason given'} (process 0 succeeded)"
        for k, result in enumerate(results)
        if k > 0 and not result.ok
    ]


def differing_results(results: Sequence[ProcessResult]) -> list[str]:
    """Seed 0's result of each later process against process 0's, beyond the stated error."""
    first = results[0]
    stated = first.expected_error
    problems = []
    for k, result in enumerate(results):
        if k == 0 or not result.ok:
            continue
        mismatch = _seed0_mismatch(first, result, stated)
        if mismatch:
            problems.append(f"process {k} {mismatch}")
    return problems


def _seed0_mismatch(first: ProcessResult, other: ProcessResult, stated: float | None) -> str | None:
    value_0 = _first(first.values)
    value_k = _first(other.values)
    if value_0 is not None and value_k is not None:
        tolerance = stated if stated else DEFAULT_RELATIVE_TOLERANCE * max(abs(value_0), 1e-300)
        if not abs(value_k - value_0) <= tolerance:  # `not <=` so a NaN counts as a difference
            return f"gave {value_k:.10g} for seed 0 where process 0 gave {value_0:.10g} (tolerance {tolerance:.2g})"
        return None
    error_0 = _first(first.errors)
    error_k = _first(other.errors)
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
    results: Sequence[ProcessResult], samples: list[float], sample_process: list[int], target_ci: float
) -> list[str]:
    """Process 0's warnings, later processes' warnings labelled with their process (unless process 0
    gave the same one), and the cell's own: its CI (which counts the processes) against the target,
    and jitlab's overhead per call."""
    warnings: list[str] = []
    first = set(results[0].warnings)
    for k, result in enumerate(results):
        for warning in result.warnings:
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
    overheads = [r.harness_overhead_s for r in results if r.harness_overhead_s is not None]
    if overheads and samples:
        overhead = sorted(overheads)[len(overheads) // 2]
        median = sorted(samples)[len(samples) // 2]
        if median > 0 and overhead > OVERHEAD_WARNING_SHARE * median and math.isfinite(overhead):
            warnings.append(
                f"jitlab's own cost per call ({overhead * 1e9:.0f} ns) is {overhead / median:.1%} of the "
                "median: time more work per call"
            )
    return warnings
