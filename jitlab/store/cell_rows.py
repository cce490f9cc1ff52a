"""A cell's record as a row of the `cells` table and back, and a worker's result as a record.

What a worker said (its reason, warnings, log and traceback) is masked for secrets on the way in and
again on the way out (a store written before secrets were masked may hold them). Columns added since
a store was made are NULL there and read as empty (`jitlab.store.migrations.add_missing_columns`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from datetime import datetime, timezone
from typing import Any

from jitlab.process_result import CellResult
from jitlab.secrets import mask_secrets
from jitlab.store.records import (
    CellRecord,
    dumps,
    instructions_fields,
    instructions_json,
    processes_fields,
    processes_json,
)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def cell_row(record: CellRecord) -> dict[str, Any]:
    """A cell's column values (without params and machine_id, which the caller resolves); what a
    worker said (its reason, warnings, log and traceback) with secrets masked."""
    return {
        "run_id": record.run_id,
        "workload": record.workload,
        "backend": record.backend,
        "size": record.size,
        "status": record.status,
        "reason": mask_secrets(record.reason),
        "first_call_s": record.first_call_s,
        "samples_s": dumps(list(record.samples_s)),
        "dispatch_samples_s": dumps(list(record.dispatch_samples_s)),
        "loops": record.loops,
        "vals": dumps(list(record.values)),
        "errors": dumps(list(record.errors)),
        "extras": dumps(record.extras),
        "expected_error": record.expected_error,
        "warnings": dumps(mask_secrets(list(record.warnings))),
        "peak_rss_bytes": record.peak_rss_bytes,
        "peak_device_bytes": record.peak_device_bytes,
        "device": record.device,
        "backend_version": record.backend_version,
        "threads": record.threads,
        "finished_at": record.finished_at or now(),
        "log": mask_secrets(record.log),
        "processes": mask_secrets(processes_json(record)),
        "timing_method": record.timing_method,
        "cpu_samples_s": dumps(list(record.cpu_samples_s)) if record.cpu_samples_s else None,
        "instructions": instructions_json(record),
    }


def cell_record(row: Any) -> CellRecord:
    return CellRecord(
        run_id=row["run_id"],
        workload=row["workload"],
        backend=row["backend"],
        size=row["size"],
        params=json.loads(row["params"]),
        status=row["status"],
        # masked again: a store written before secrets were masked may hold them
        reason=mask_secrets(row["reason"]),
        first_call_s=row["first_call_s"],
        samples_s=tuple(json.loads(row["samples_s"])),
        dispatch_samples_s=tuple(json.loads(row["dispatch_samples_s"])),
        loops=row["loops"],
        values=tuple(json.loads(row["vals"])),
        errors=tuple(json.loads(row["errors"])),
        extras=json.loads(row["extras"]),
        expected_error=row["expected_error"],
        warnings=tuple(mask_secrets(json.loads(row["warnings"]))),
        peak_rss_bytes=row["peak_rss_bytes"],
        peak_device_bytes=row["peak_device_bytes"],
        device=row["device"],
        backend_version=row["backend_version"],
        threads=row["threads"],
        finished_at=row["finished_at"],
        log=mask_secrets(row["log"]),
        timing_method=row["timing_method"],
        machine=mask_secrets(json.loads(row["machine_info"])),
        cpu_samples_s=tuple(json.loads(row.get("cpu_samples_s") or "[]")),
        **processes_fields(mask_secrets(row.get("processes"))),
        **instructions_fields(row.get("instructions")),
    )


def cell_from_result(
    run_id: int,
    workload: str,
    backend: str,
    size: int,
    params: dict[str, Any],
    result: CellResult | Mapping[str, Any],
    machine: dict[str, Any] | None = None,
) -> CellRecord:
    """A cell's record from its merged result. A plain object (an export of an older jitlab, a
    pytest session's cell, a pyperf import) is read tolerantly: keys it lacks take their defaults."""
    if not isinstance(result, CellResult):
        result = CellResult.from_dict(result)
    return CellRecord(
        run_id=run_id,
        workload=workload,
        backend=backend,
        size=size,
        params=dict(params),
        **{name: getattr(result, name) for name in _SAME_NAMES},
        dispatch_samples_s=result.dispatch_s,
        extras=dict(result.extras or {}),
        finished_at=now(),
        machine=dict(machine or {}),
    )


#: the fields a cell's record takes from its merged result as they are (the rest: `cell_from_result`)
_SAME_NAMES = tuple(
    sorted({f.name for f in fields(CellResult)} & {f.name for f in fields(CellRecord)} - {"extras"})
)
