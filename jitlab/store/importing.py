"""`jitlab import`: merging runs from another store (a SQLite file or a PostgreSQL URL) or from a
`jitlab export --format json` file, without duplicates. (Which reader a source needs, these or
another tool's such as pyperf's, is decided in `jitlab.interop.importing`.)

A run is the same run wherever it is stored when its UUID is the same: such runs are skipped, never
stored twice. Each imported run gets the next local number here and keeps its UUID, times, status,
options and machines; it is written in one transaction with all its cells, so an import that stops
half way leaves whole runs only. Exports written before runs had UUIDs get one derived from their
content, so importing the same file twice still imports it once.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitlab.errors import UserError
from jitlab.secrets import mask_secrets
from jitlab.store.database import Store, cell_from_result
from jitlab.store.migrations import derived_run_uuid
from jitlab.store.records import CellRecord, RunRecord, dumps
from jitlab.store.urls import looks_like_url

if TYPE_CHECKING:
    from sqlalchemy import Connection

SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class ImportedRun:
    uuid: str
    source_id: int | None
    local_id: int
    target: str
    cells: int
    #: where it came from (a store, an export or another tool's file) and in which format
    source: str = ""
    format: str = ""


@dataclass(frozen=True)
class SkippedRun:
    uuid: str
    source_id: int | None
    local_id: int
    source: str = ""
    format: str = ""


@dataclass
class ImportReport:
    store: str
    imported: list[ImportedRun] = field(default_factory=list)
    skipped: list[SkippedRun] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "imported": [r.__dict__ for r in self.imported],
            "skipped": [r.__dict__ for r in self.skipped],
        }


RunAndCells = tuple[RunRecord, list[CellRecord]]


def import_runs(
    store: Store, runs: Iterable[RunAndCells], report: ImportReport, source: str = "", format: str = ""
) -> None:
    """Import every run of `runs` that `store` lacks (by UUID) and note each in `report`."""
    for run, cells in runs:
        local = import_run(store, run, cells)
        if local is None:
            existing = store.run_by_uuid(run.uuid)
            assert existing is not None
            report.skipped.append(SkippedRun(run.uuid, run.run_id or None, existing.run_id, source, format))
        else:
            report.imported.append(
                ImportedRun(run.uuid, run.run_id or None, local, run.target, len(cells), source, format)
            )


def import_run(store: Store, run: RunRecord, cells: list[CellRecord]) -> int | None:
    """Store `run` with its cells under a new local number; None when its UUID is already here."""
    from sqlalchemy import select
    from sqlalchemy.exc import IntegrityError

    from jitlab.store.schema import runs

    def insert(conn: Connection) -> int | None:
        if conn.execute(select(runs.c.id).where(runs.c.uuid == run.uuid)).first():
            return None  # here already (or written by an attempt whose commit was not confirmed)
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
                options=dumps(mask_secrets(run.options)),
                machine=dumps(mask_secrets(run.machine)),
            )
        )
        local = int(result.inserted_primary_key[0])
        store.insert_cells([replace(c, run_id=local, machine=c.machine or run.machine) for c in cells], conn)
        return local

    try:
        return store.attempt_write(insert)
    except UserError as exc:
        # two imports of one run at once: the UUID's uniqueness lets one win; the other skips it
        if isinstance(exc.__cause__, IntegrityError) and store.run_by_uuid(run.uuid) is not None:
            return None
        raise


def is_sqlite_file(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER


def read_store(location: str) -> Iterator[RunAndCells]:
    """Every run of the store at `location` (a PostgreSQL URL, or a SQLite file: read from a copy,
    since opening an older store upgrades it, and the source is not ours to change)."""
    if looks_like_url(location):
        yield from _read_store(location)
        return
    path = Path(location)
    with tempfile.TemporaryDirectory(prefix="jitlab-import-") as scratch:
        copy = Path(scratch) / path.name
        shutil.copyfile(path, copy)
        yield from _read_store(str(copy))


def _read_store(location: str) -> Iterator[RunAndCells]:
    source = Store(location, create=False)
    try:
        for run in source.runs():
            yield run, source.cells(run.run_id)
    finally:
        source.close()


def looks_like_export(data: Any) -> bool:
    """A `jitlab export --format json` document (or a list of them), or something that means to be
    one (a jitlab JSON document without raw samples is then refused by `runs_from_export`)."""
    items = data if isinstance(data, list) else [data]
    return bool(items) and all(
        isinstance(item, dict)
        and ("run" in item or "cells" in item or str(item.get("schema", "")).startswith("jitlab."))
        for item in items
    )


def runs_from_export(data: Any, source: str) -> list[RunAndCells]:
    """The runs of a parsed `jitlab export --format json` file (all checked before any is imported)."""
    exports = data if isinstance(data, list) else [data]
    return [_export_run(source, item) for item in exports]


def _export_run(path: str, data: Any) -> RunAndCells:
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
    # the run's machine: in the run (exports since jitlab.run/1), else the envelope's
    run_machine = r.get("machine") or _without_fingerprint(data.get("machine"))
    machines = data.get("machines") if isinstance(data.get("machines"), dict) else {}
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
            machine=dict(run_machine or {}),
            uuid=r.get("uuid") or data.get("run_uuid") or "",
        )
        cells = [_export_cell(run, c, machines) for c in data["cells"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{path}: a run or cell lacks {exc} (not a complete jitlab export)") from exc
    if not run.uuid:
        keys = [(c.workload, c.backend, c.size, c.params, list(c.samples_s)) for c in cells]
        run = replace(run, uuid=derived_run_uuid(run.created_at, run.target, run.machine, keys))
    return run, cells


def _without_fingerprint(info: Any) -> dict[str, Any] | None:
    """Machine metadata as stored, from the envelope's copy (which adds its fingerprint)."""
    if not isinstance(info, dict):
        return None
    return {k: v for k, v in info.items() if k != "fingerprint"}


def _cell_machine(c: dict[str, Any], machines: dict[str, Any]) -> dict[str, Any] | None:
    """A cell's machine: its `machine_info`, else (older exports) a `machine` object, else the
    envelope's `machines` entry its `machine` names; None means the run's machine."""
    if isinstance(c.get("machine_info"), dict):
        return c["machine_info"]
    if isinstance(c.get("machine"), dict):
        return c["machine"]
    if isinstance(c.get("machine"), str) and c["machine"] in machines:
        return _without_fingerprint(machines[c["machine"]])
    return None


def _export_cell(run: RunRecord, c: dict[str, Any], machines: dict[str, Any]) -> CellRecord:
    if "samples_s" not in c or not isinstance(c["samples_s"], list):
        raise KeyError("samples_s")
    result = {
        **c,
        "dispatch_s": c.get("dispatch_samples_s") or [],
        "extras": c.get("extras_samples") or {},
        # the export's `instructions` is the median; the counts themselves are its raw list
        "instructions": c.get("instructions_per_call") or [],
    }
    record = cell_from_result(
        run.run_id,
        c["workload"],
        c["backend"],
        int(c["size"]),
        c.get("params") or {},
        result,
        _cell_machine(c, machines),
    )
    return replace(record, finished_at=c.get("finished_at") or run.finished_at or run.created_at)
