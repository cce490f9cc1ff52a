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
    "ci95_low_s", "ci95_high_s", "iqr_s", "min_s", "samples", "dispatch_s", "error", "expected_error",
    "peak_rss_bytes", "peak_device_bytes", "device", "threads", "backend_version", "warnings", "machine",
]  # fmt: skip
#: raw per-sample and per-seed lists, added on request
RAW_COLUMNS = ["samples_s", "dispatch_samples_s", "errors", "values"]


def raw_fields(cell: CellRecord) -> dict[str, list]:
    return {
        "samples_s": list(cell.samples_s),
        "dispatch_samples_s": list(cell.dispatch_samples_s),
        "errors": list(cell.errors),
        "values": list(cell.values),
        # what `jitlab import` needs to restore the cell exactly
        "extras_samples": dict(cell.extras),
        "backend_version": cell.backend_version,
        "finished_at": cell.finished_at,
        "log": cell.log,
        "machine": dict(cell.machine),
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


def run_json(run: RunRecord, cells: Sequence[CellRecord], raw: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {"run_id": run.run_id, "run_uuid": run.uuid, "cells": [c.to_json() for c in cells]}
    if raw:
        data["run"] = {k: v for k, v in asdict(run).items() if k != "output_folder"}
        for entry, cell in zip(data["cells"], cells):
            entry.update(raw_fields(cell))
    return data


def to_json(run: RunRecord, cells: Sequence[CellRecord]) -> str:
    return json.dumps(run_json(run, cells, raw=True), indent=2)


def to_csv(cells: Sequence[CellRecord]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FLAT_COLUMNS)
    writer.writeheader()
    for cell in cells:
        row = flat_row(cell)
        row.update(params=json.dumps(cell.params, sort_keys=True), warnings="; ".join(cell.warnings))
        writer.writerow(row)
    return buffer.getvalue()
