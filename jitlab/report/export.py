"""Exporting a run's cells as CSV or JSON, with raw samples in JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from jitlab.store import CellRecord, RunRecord

CSV_COLUMNS = [
    "workload",
    "backend",
    "size",
    "params",
    "status",
    "reason",
    "first_call_s",
    "median_s",
    "ci95_low_s",
    "ci95_high_s",
    "iqr_s",
    "min_s",
    "samples",
    "dispatch_s",
    "error",
    "expected_error",
    "peak_rss_bytes",
    "peak_device_bytes",
    "device",
    "threads",
]


def run_json(run: RunRecord, cells: Sequence[CellRecord], raw: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {"run_id": run.run_id, "cells": [c.to_json() for c in cells]}
    if raw:
        data["run"] = asdict(run)
        for entry, cell in zip(data["cells"], cells):
            entry["samples_s"] = list(cell.samples_s)
            entry["dispatch_samples_s"] = list(cell.dispatch_samples_s)
            entry["errors"] = list(cell.errors)
            entry["values"] = list(cell.values)
    return data


def to_json(run: RunRecord, cells: Sequence[CellRecord]) -> str:
    return json.dumps(run_json(run, cells, raw=True), indent=2)


def to_csv(cells: Sequence[CellRecord]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for cell in cells:
        d = cell.to_json()
        ci = d["ci95_s"] or [None, None]
        writer.writerow(
            {
                **{k: d.get(k) for k in CSV_COLUMNS if k in d},
                "params": json.dumps(cell.params, sort_keys=True),
                "ci95_low_s": ci[0],
                "ci95_high_s": ci[1],
            }
        )
    return buffer.getvalue()
