"""Stored results as immutable records. Statistics are derived from the raw samples on demand,
never stored beside them, so they cannot disagree."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from jitlab.engine.stats import Summary, rms, summarize


@dataclass(frozen=True)
class CellRecord:
    run_id: int
    workload: str
    backend: str
    size: int
    params: dict[str, Any]
    status: str  # ok | failed | timeout | unavailable
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

    @cached_property
    def summary(self) -> Summary:
        return summarize(self.samples_s)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

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
        }


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


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
