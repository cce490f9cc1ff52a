"""Stored results as immutable records. Statistics are derived from the raw samples on demand,
never stored beside them, so they cannot disagree."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from jitlab.stats.summary import Summary, rms, summarize
from jitlab.store.run_options import RunOptions


@dataclass(frozen=True)
class CellRecord:
    run_id: int
    workload: str
    backend: str
    size: int
    params: dict[str, Any]
    status: str  # ok | failed | timeout | unavailable | inconsistent (its processes disagreed)
    reason: str | None
    first_call_s: float | None = None
    samples_s: tuple[float, ...] = ()
    dispatch_samples_s: tuple[float, ...] = ()
    loops: int | None = None
    values: tuple[float | None, ...] = ()
    errors: tuple[float, ...] = ()
    extras: dict[str, list[float]] = field(default_factory=dict)
    expected_error: float | None = None
    warnings: tuple[str, ...] = ()
    peak_rss_bytes: int | None = None
    peak_device_bytes: int | None = None
    device: str | None = None
    backend_version: str | None = None
    threads: int | None = None
    finished_at: str | None = None
    log: str | None = None
    #: how the samples were timed ("host clock", "cuda events", ...); None in stores of older jitlabs
    timing_method: str | None = None
    #: metadata of the machine that measured this cell (a run across machines has several)
    machine: dict[str, Any] = field(default_factory=dict, compare=False)
    #: the worker process each of `samples_s` came from; empty (cells stored before jitlab measured
    #: in several processes, or measured in one) means all from one process
    sample_process: tuple[int, ...] = ()
    #: one record per worker process (status, first call, samples, seed-0 result, overhead...)
    process_details: tuple[dict[str, Any], ...] = ()
    #: CPU seconds per call of each sample, parallel to `samples_s`; empty when the backend runs
    #: several threads (CPU time then adds them up) and in stores of older jitlabs
    cpu_samples_s: tuple[float, ...] = ()
    #: instructions per call of each counted block (`jitlab run --measure instructions`: the calls
    #: counted under Valgrind), and the worker process of each; empty for a wall-time cell
    instructions: tuple[float, ...] = ()
    instruction_process: tuple[int, ...] = ()
    #: processes still planned when this was stored (an interrupted run keeps such a cell, and
    #: `jitlab run --resume` measures it again); 0 for a final cell
    pending_processes: int = 0

    @property
    def partial(self) -> bool:
        """Stored before its last round. Stores of older jitlabs said so only in a warning."""
        return self.pending_processes > 0 or any(w.startswith(PARTIAL_WARNING) for w in self.warnings)

    @cached_property
    def summary(self) -> Summary:
        """Median, CI (hierarchical over processes when there are several) and noise floor."""
        return summarize(self.samples_s, sample_process=self.sample_process or None)

    @property
    def processes(self) -> int:
        """Worker processes the samples came from (1 for cells stored before processes existed)."""
        return len(set(self.sample_process)) if self.sample_process else 1

    @property
    def noise_floor(self) -> float | None:
        """Largest deviation of one process's median from the cell's (None with one process)."""
        return self.summary.noise_floor if self.samples_s else None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def measure(self) -> str:
        """What the cell measured: "instructions" (counted under Valgrind) or "wall time"."""
        return "instructions" if self.instructions else "wall time"

    @property
    def measured(self) -> bool:
        """Has a figure: timing samples, or instruction counts."""
        return self.ok and bool(self.samples_s or self.instructions)

    @cached_property
    def cpu_summary(self) -> Summary | None:
        """Median and CI of the CPU time per call (None where it does not apply)."""
        if not self.cpu_samples_s or len(self.cpu_samples_s) != len(self.samples_s):
            return None
        return summarize(self.cpu_samples_s, sample_process=self.sample_process or None)

    @cached_property
    def instruction_summary(self) -> Summary | None:
        """Median and CI of the instructions per call (None for a wall-time cell)."""
        if not self.instructions:
            return None
        return summarize(self.instructions, sample_process=self.instruction_process or None)

    @property
    def median_s(self) -> float | None:
        return self.summary.median if self.samples_s else None

    @property
    def dispatch_s(self) -> float | None:
        return float(np.median(self.dispatch_samples_s)) if self.dispatch_samples_s else None

    @property
    def error(self) -> float | None:
        """Root mean square of the per-seed errors."""
        return rms(self.errors) if self.errors else None

    def extra(self, name: str) -> float | None:
        values = self.extras.get(name) or []
        return float(np.mean(values)) if values else None

    def to_json(self) -> dict[str, Any]:
        """The cell as documented for `jitlab run --json`."""
        s = self.summary if self.samples_s else None
        return {
            "workload": self.workload,
            "backend": self.backend,
            "size": self.size,
            "params": self.params,
            "status": self.status,
            "reason": self.reason,
            "first_call_s": self.first_call_s,
            "median_s": s.median if s else None,
            "ci95_s": [s.ci_low, s.ci_high] if s else None,
            "iqr_s": s.iqr if s else None,
            "min_s": s.minimum if s else None,
            "samples": s.count if s else 0,
            "processes": self.processes,
            "noise_floor": s.noise_floor if s else None,
            "loops": self.loops,
            "error": self.error,
            "expected_error": self.expected_error,
            "extras": {name: self.extra(name) for name in self.extras},
            "dispatch_s": self.dispatch_s,
            "peak_rss_bytes": self.peak_rss_bytes,
            "peak_device_bytes": self.peak_device_bytes,
            "device": self.device,
            "timing_method": self.timing_method,
            "threads": self.threads,
            "warnings": list(self.warnings),
            "measure": self.measure,
            "cpu_median_s": self.cpu_summary.median if self.cpu_summary else None,
            "instructions": self.instruction_summary.median if self.instruction_summary else None,
            "instructions_ci95": [self.instruction_summary.ci_low, self.instruction_summary.ci_high]
            if self.instruction_summary
            else None,
            "load": self.load_json(),
        }

    def load_json(self) -> dict[str, Any] | None:
        """The busiest of its processes' loads (`jitlab.engine.load`), None when not recorded."""
        loads = [d.get("load") for d in self.process_details if isinstance(d.get("load"), dict)]
        return max(
            loads, key=lambda x: (x.get("wait_share") or 0) + (x.get("steal_share") or 0), default=None
        )


#: the start of the warning a cell stored before its last round carries (what the user reads; the
#: state is `CellRecord.pending_processes`)
PARTIAL_WARNING = "partial: "


@dataclass(frozen=True)
class RunRecord:
    run_id: int
    created_at: str
    finished_at: str | None
    status: str  # running | finished | interrupted
    target: str
    workloads: tuple[str, ...]
    backends: tuple[str, ...]
    sizes: tuple[int, ...] | None
    #: the stored object of its `RunOptions` (`run_options` reads it)
    options: dict[str, Any]
    machine: dict[str, Any]
    store_path: str = ""
    #: globally unique id: the same run in two stores has the same uuid (the local number differs)
    uuid: str = ""
    #: local folder for files that belong beside the store (plots); the store's folder for SQLite
    output_folder: str = ""

    @property
    def plots_folder(self) -> Path:
        if self.output_folder:
            return Path(self.output_folder)
        return Path(self.store_path).parent

    @property
    def run_options(self) -> RunOptions:
        """The options it was measured with (those of older jitlabs and other tools included)."""
        return RunOptions.from_json(self.options)

    @property
    def pair_id(self) -> str | None:
        """The id shared with the run of the other build measured side by side with this one
        (`jitlab run NEW --against OLD`), None for a run measured alone."""
        return self.run_options.pair_id


def processes_json(record: CellRecord) -> str | None:
    """The `processes` column of a cell: None when it has no process information."""
    if not record.sample_process and not record.process_details:
        return None
    pending = {"pending": record.pending_processes} if record.pending_processes else {}
    return dumps(
        {"sample_process": list(record.sample_process), "workers": list(record.process_details), **pending}
    )


def processes_fields(text: str | None) -> dict[str, Any]:
    """CellRecord fields from the `processes` column (none for NULL: one process)."""
    if not text:
        return {}
    data = json.loads(text)
    return {
        "sample_process": tuple(data.get("sample_process") or ()),
        "process_details": tuple(data.get("workers") or ()),
        "pending_processes": int(data.get("pending") or 0),
    }


def instructions_json(record: CellRecord) -> str | None:
    """The `instructions` column of a cell: None for a wall-time cell."""
    if not record.instructions:
        return None
    return dumps({"per_call": list(record.instructions), "process": list(record.instruction_process)})


def instructions_fields(text: str | None) -> dict[str, Any]:
    """CellRecord fields from the `instructions` column (none for NULL: a wall-time cell)."""
    if not text:
        return {}
    data = json.loads(text)
    return {
        "instructions": tuple(data.get("per_call") or ()),
        "instruction_process": tuple(data.get("process") or ()),
    }


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
