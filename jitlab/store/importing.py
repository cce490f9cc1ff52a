"""`jitlab import`: merging runs from another store (a SQLite file or a PostgreSQL URL) or from a
`jitlab export --format json` file, without duplicates.

A run is the same run wherever it is stored when its UUID is the same: such runs are skipped, never
stored twice. Each imported run gets the next local number here and keeps its UUID, times, status,
options and machines; it is written in one transaction with all its cells, so an import that stops
half way leaves whole runs only. Exports written before runs had UUIDs get one derived from their
content, so importing the same file twice still imports it once.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jitlab.errors import UserError
from jitlab.store.database import Store, cell_from_result
from jitlab.store.migrations import derived_run_uuid
from jitlab.store.records import CellRecord, RunRecord, dumps
from jitlab.store.urls import looks_like_url, parse_store

SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class ImportedRun:
    uuid: str
    source_id: int | None
    local_id: int
    target: str
    cells: int


@dataclass(frozen=True)
class SkippedRun:
    uuid: str
    source_id: int | None
    local_id: int


@dataclass
class ImportReport:
    source: str
    imported: list[ImportedRun] = field(default_factory=list)
    skipped: list[SkippedRun] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "imported": [r.__dict__ for r in self.imported],
            "skipped": [r.__dict__ for r in self.skipped],
        }


def import_into(store: Store, source: str) -> ImportReport:
    """Import every run of `source` (store path or URL, or an export file) that `store` lacks."""
    report = ImportReport(source=parse_store(source).display if looks_like_url(source) else source)
    for run, cells in read_source(source):
        local = import_run(store, run, cells)
        if local is None:
            existing = store.run_by_uuid(run.uuid)
            assert existing is not None
            report.skipped.append(SkippedRun(run.uuid, run.run_id or None, existing.run_id))
        else:
            report.imported.append(ImportedRun(run.uuid, run.run_id or None, local, run.target, len(cells)))
    return report


def import_run(store: Store, run: RunRecord, cells: list[CellRecord]) -> int | None:
    """Store `run` with its cells under a new local number; None when its UUID is already here."""
    from sqlalchemy import select
    from sqlalchemy.exc import IntegrityError

    from jitlab.store.schema import runs

    try:
        with store._write() as conn:
            if conn.execute(select(runs.c.id).where(runs.c.uuid == run.uuid)).first():
                return None
            result = conn.execute(
                runs.insert().values(
                    uuid=run.uuid,
                    created_at=run.created_at,
                    finished_at=run.finished_at,
                    status=run.status,
                    target=run.target,
                    workloads=dumps(list(run.workloads)),
                    backends=dumps(list(run.backends)),
                    sizes=dumps(list(run.sizes) if run.sizes else None),
                    options=dumps(run.options),
                    machine=dumps(run.machine),
                )
            )
            local = int(result.inserted_primary_key[0])
            store.insert_cells(
                [replace(c, run_id=local, machine=c.machine or run.machine) for c in cells], conn
            )
            return local
    except UserError as exc:
        # two imports of one run at once: the UUID's uniqueness lets one win; the other skips it
        if isinstance(exc.__cause__, IntegrityError) and store.run_by_uuid(run.uuid) is not None:
            return None
        raise


def read_source(source: str) -> Iterator[tuple[RunRecord, list[CellRecord]]]:
    if looks_like_url(source):
        yield from _read_store(source)
        return
    path = Path(source)
    if not path.is_file():
        raise UserError(
            f"{source} does not exist: give a store (file or postgresql:// URL) or an export file"
        )
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_HEADER))
    if head == SQLITE_HEADER:
        with tempfile.TemporaryDirectory(prefix="jitlab-import-") as scratch:
            # read a copy: opening an older store upgrades it, and the source is not ours to change
            copy = Path(scratch) / path.name
            shutil.copyfile(path, copy)
            yield from _read_store(str(copy))
        return
    yield from _read_export(path)


def _read_store(location: str) -> Iterator[tuple[RunRecord, list[CellRecord]]]:
    source = Store(location, create=False)
    try:
        for run in source.runs():
            yield run, source.cells(run.run_id)
    finally:
        source.close()


def _read_export(path: Path) -> Iterator[tuple[RunRecord, list[CellRecord]]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(
            f"{path} is neither a jitlab store nor a JSON file ({type(exc).__name__}): "
            "give a store or a `jitlab export --format json` file"
        ) from exc
    exports = data if isinstance(data, list) else [data]
    parsed = [_export_run(path, item) for item in exports]  # check all before importing any
    yield from parsed


def _export_run(path: Path, data: Any) -> tuple[RunRecord, list[CellRecord]]:
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("run"), dict)
        or not isinstance(data.get("cells"), list)
    ):
        raise UserError(
            f"{path} is not a `jitlab export --format json` file (no run with raw samples): "
            "export the run with `jitlab export RUN --format json`"
        )
    r = data["run"]
    try:
        run = RunRecord(
            run_id=int(r.get("run_id") or 0),
            created_at=r["created_at"],
            finished_at=r.get("finished_at"),
            status=r.get("status", "finished"),
            target=r["target"],
            workloads=tuple(r.get("workloads") or ()),
            backends=tuple(r.get("backends") or ()),
            sizes=tuple(r["sizes"]) if r.get("sizes") else None,
            options=dict(r.get("options") or {}),
            machine=dict(r.get("machine") or {}),
            uuid=r.get("uuid") or "",
        )
        cells = [_export_cell(run, c) for c in data["cells"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{path}: a run or cell lacks {exc} (not a complete jitlab export)") from exc
    if not run.uuid:
        keys = [(c.workload, c.backend, c.size, c.params, list(c.samples_s)) for c in cells]
        run = replace(run, uuid=derived_run_uuid(run.created_at, run.target, run.machine, keys))
    return run, cells


def _export_cell(run: RunRecord, c: dict[str, Any]) -> CellRecord:
    if "samples_s" not in c or not isinstance(c["samples_s"], list):
        raise KeyError("samples_s")
    result = {
        **c,
        "dispatch_s": c.get("dispatch_samples_s") or [],
        "extras": c.get("extras_samples") or {},
    }
    record = cell_from_result(
        run.run_id,
        c["workload"],
        c["backend"],
        int(c["size"]),
        c.get("params") or {},
        result,
        c.get("machine"),
    )
    return replace(record, finished_at=c.get("finished_at") or run.finished_at or run.created_at)
