"""Exporting a run's cells as CSV or JSON, with raw samples in JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from jitlab.store import CellRecord, RunRecord
from jitlab.store.identity import machine_label

#: one flat row per cell: the columns of `jitlab export --format csv` and of `jitlab.load`
FLAT_COLUMNS = [
    "run_id", "workload", "backend", "size", "params", "status", "reason", "first_call_s", "median_s",
    "ci95_low_s", "ci95_high_s", "iqr_s", "min_s", "samples", "processes", "noise_floor", "dispatch_s",
    "error", "expected_error", "peak_rss_bytes", "peak_device_bytes", "device", "timing_method", "threads",
    "backend_version", "warnings", "machine", "measure", "cpu_median_s", "instructions",
]  # fmt: skip
#: raw per-sample and per-seed lists, added on request
RAW_COLUMNS = [
    "samples_s", "sample_process", "dispatch_samples_s", "errors", "values",
    "cpu_samples_s", "instructions_per_call", "instruction_process",
]  # fmt: skip


def raw_fields(cell: CellRecord) -> dict[str, list]:
    return {
        "samples_s": list(cell.samples_s),
        # the worker process of each sample (all 0 for a cell measured in one process)
        "sample_process": list(cell.sample_process) or [0] * len(cell.samples_s),
        "process_details": list(cell.process_details),
        "dispatch_samples_s": list(cell.dispatch_samples_s),
        "errors": list(cell.errors),
        "values": list(cell.values),
        "cpu_samples_s": list(cell.cpu_samples_s),
        "instructions_per_call": list(cell.instructions),
        "instruction_process": list(cell.instruction_process),
        # what `jitlab import` needs to restore the cell exactly
        "extras_samples": dict(cell.extras),
        "backend_version": cell.backend_version,
        "finished_at": cell.finished_at,
        "log": cell.log,
        # the metadata of the machine that measured the cell (`machine` names it)
        "machine_info": dict(cell.machine),
    }


def flat_row(cell: CellRecord) -> dict[str, Any]:
    """A cell as one flat row (the CI split in two columns), statistics derived from its samples."""
    d = cell.to_json()
    low, high = d["ci95_s"] or [None, None]
    row = {key: d.get(key) for key in FLAT_COLUMNS}
    row.update(
        run_id=cell.run_id,
        params=dict(cell.params),
        ci95_low_s=low,
        ci95_high_s=high,
        backend_version=cell.backend_version,
        warnings=list(cell.warnings),
        machine=machine_label(cell.machine),  # the machine that measured the cell, by name
    )
    return row


#: the statuses a cell can have, in the order `summary` counts them
STATUSES = ("ok", "failed", "timeout", "unavailable", "inconsistent")


def run_summary(run: RunRecord) -> dict[str, Any]:
    """The run itself (its machine is the envelope's `machine`)."""
    data = asdict(run)
    data.pop("machine", None)
    data.pop("store_path", None)
    data.pop("output_folder", None)
    data["store"] = run.store_path
    return data


def run_json(run: RunRecord, cells: Sequence[CellRecord], raw: bool = False) -> dict[str, Any]:
    """The run document of `jitlab run --json`, `show --json` and `export --format json` (with
    `raw`: every sample, per-seed error and value, and what `jitlab import` needs to restore the run
    exactly), without its envelope. Described by jitlab/schemas/run.schema.json. Each cell names the
    machine that measured it (`machine`, a key of the envelope's `machines` on a run of several)."""
    from jitlab.report.derived import run_derived
    from jitlab.report.fastest import run_fastest
    from jitlab.report.folding import drift_json

    counts = {status: sum(c.status == status for c in cells) for status in STATUSES}
    data: dict[str, Any] = {
        "run_id": run.run_id,
        "run_uuid": run.uuid,
        "run": run_summary(run),
        "summary": {"cells": len(cells), **counts},
        "cells": [{**c.to_json(), "machine": machine_label(c.machine)} for c in cells],
        "fastest": [f.to_json() for f in run_fastest(run, cells)],
        "derived": [d.to_json() for d in run_derived(run, cells)],
        "canary": drift_json(cells),
    }
    if raw:
        data["run"]["machine"] = dict(run.machine)
        for entry, cell in zip(data["cells"], cells):
            entry.update(raw_fields(cell))
    return data


def to_json(run: RunRecord, cells: Sequence[CellRecord], envelope: dict[str, Any] | None = None) -> str:
    """The exported run as text: `envelope` (schema, version, machine, options) around the document."""
    return json.dumps({**(envelope or {}), **run_json(run, cells, raw=True)}, indent=2)


def to_csv(cells: Sequence[CellRecord]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FLAT_COLUMNS)
    writer.writeheader()
    for cell in cells:
        row = flat_row(cell)
        row.update(params=json.dumps(cell.params, sort_keys=True), warnings="; ".join(cell.warnings))
        writer.writerow(row)
    return buffer.getvalue()
