"""The results store: one SQLite file holding runs and their cells, raw samples included.

Each finished cell is committed in its own transaction, so a run killed half way keeps what it
finished and `--resume` can run only what is missing. A file that is not a jitlab store is never
modified: it is rejected before anything is written.

Schema 2 added one nullable column to `cells`, `processes` (JSON: the worker process of each sample
and one record per process). A schema-1 store is upgraded in place when it is opened writable (the
column is added, old cells read as measured in one process); a read-only one is read as it is.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jitlab.backends.registry import backend_rank
from jitlab.errors import UserError
from jitlab.store.records import CellRecord, RunRecord, dumps
from jitlab.userfiles import writable_folder

SCHEMA_VERSION = 2
#: older schemas this version reads (and upgrades when it may write)
READABLE_SCHEMAS = (1, 2)
DEFAULT_STORE = Path(".jitlab") / "results.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    target TEXT NOT NULL,
    workloads TEXT NOT NULL,
    backends TEXT NOT NULL,
    sizes TEXT,
    options TEXT NOT NULL,
    machine TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    workload TEXT NOT NULL,
    backend TEXT NOT NULL,
    size INTEGER NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    first_call_s REAL,
    samples_s TEXT NOT NULL,
    dispatch_samples_s TEXT NOT NULL,
    loops INTEGER,
    vals TEXT NOT NULL,
    errors TEXT NOT NULL,
    extras TEXT NOT NULL,
    expected_error REAL,
    warnings TEXT NOT NULL,
    peak_rss_bytes INTEGER,
    peak_device_bytes INTEGER,
    device TEXT,
    backend_version TEXT,
    threads INTEGER,
    finished_at TEXT NOT NULL,
    log TEXT,
    processes TEXT,
    PRIMARY KEY (run_id, workload, backend, size, params)
);
"""
#: the cells columns in insertion order
CELL_COLUMNS = (
    "run_id", "workload", "backend", "size", "params", "status", "reason", "first_call_s", "samples_s",
    "dispatch_samples_s", "loops", "vals", "errors", "extras", "expected_error", "warnings",
    "peak_rss_bytes", "peak_device_bytes", "device", "backend_version", "threads", "finished_at", "log",
    "processes",
)  # fmt: skip


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def resolve_store_path(path: str | os.PathLike | None) -> Path:
    """`--store`, else $JITLAB_STORE, else .jitlab/results.sqlite under the working directory."""
    if path:
        return Path(path)
    if os.environ.get("JITLAB_STORE"):
        return Path(os.environ["JITLAB_STORE"])
    return DEFAULT_STORE


class Store:
    def __init__(self, path: str | os.PathLike | None = None, create: bool = True):
        self.path = resolve_store_path(path)
        if not self.path.exists():
            if not create:
                raise UserError(
                    f"no results store at {self.path}: run `jitlab run` first, or pass --store PATH"
                )
            self._check_creatable()
        self._conn = self._open()

    # -- opening ---------------------------------------------------------------------------------
    def _check_creatable(self) -> None:
        writable_folder(self.path.parent, "store folder", "pass --store PATH")

    def _open(self) -> sqlite3.Connection:
        if self.path.is_dir():
            raise UserError(f"store path {self.path} is a folder: pass a file path with --store")
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            conn = sqlite3.connect(self.path, timeout=30)
            conn.row_factory = sqlite3.Row
            if existed:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if not {"meta", "runs", "cells"} <= tables:
                    conn.close()
                    raise UserError(
                        f"{self.path} is a SQLite file but not a jitlab results store: pass another --store PATH"
                    )
                version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                if version is None or int(version[0]) not in READABLE_SCHEMAS:
                    conn.close()
                    raise UserError(
                        f"{self.path} was written by another jitlab version (schema {version and version[0]}): "
                        "pass another --store PATH"
                    )
                if int(version[0]) < SCHEMA_VERSION and os.access(self.path, os.W_OK):
                    _upgrade(conn)
            else:
                with conn:
                    conn.executescript(SCHEMA)
                    conn.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                    )
        except sqlite3.DatabaseError as exc:
            raise UserError(
                f"{self.path} is not a readable jitlab results store ({exc}): move it away or pass --store PATH"
            ) from exc
        if existed and not os.access(self.path, os.W_OK):
            self.read_only = True
        else:
            self.read_only = False
        return conn

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise UserError(f"the store {self.path} is read-only: pass a writable --store PATH")
        try:
            with self._conn:
                yield self._conn
        except sqlite3.OperationalError as exc:
            raise UserError(
                f"cannot write the store {self.path}: {exc}; pass a writable --store PATH"
            ) from exc

    def check_writable(self) -> None:
        with self._transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('last_opened', ?)", (now(),))

    # -- runs ------------------------------------------------------------------------------------
    def create_run(
        self,
        target: str,
        workloads: list[str],
        backends: list[str],
        sizes: list[int] | None,
        options: dict[str, Any],
        machine: dict[str, Any],
    ) -> int:
        with self._transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (created_at, status, target, workloads, backends, sizes, options, machine)"
                " VALUES (?, 'running', ?, ?, ?, ?, ?, ?)",
                (
                    now(),
                    target,
                    dumps(workloads),
                    dumps(backends),
                    dumps(sizes),
                    dumps(options),
                    dumps(machine),
                ),
            )
            return int(cursor.lastrowid)

    def set_run_status(self, run_id: int, status: str) -> None:
        with self._transaction() as conn:
            conn.execute("UPDATE runs SET status=?, finished_at=? WHERE id=?", (status, now(), run_id))

    def run(self, run_id: int) -> RunRecord:
        row = self._conn.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise UserError(f"no run {run_id} in {self.path}: `jitlab runs` lists them")
        return self._run_record(row)

    def runs(self) -> list[RunRecord]:
        return [self._run_record(r) for r in self._conn.execute("SELECT * FROM runs ORDER BY id")]

    def _run_record(self, row: sqlite3.Row) -> RunRecord:
        return RunRecord(
            run_id=row["id"],
            created_at=row["created_at"],
            finished_at=row["finished_at"],
            status=row["status"],
            target=row["target"],
            workloads=tuple(json.loads(row["workloads"])),
            backends=tuple(json.loads(row["backends"])),
            sizes=tuple(json.loads(row["sizes"])) if row["sizes"] and json.loads(row["sizes"]) else None,
            options=json.loads(row["options"]),
            machine=json.loads(row["machine"]),
            store_path=str(self.path),
        )

    # -- cells -----------------------------------------------------------------------------------
    def save_cell(
        self,
        run_id: int,
        workload: str,
        backend: str,
        size: int,
        params: dict[str, Any],
        result: dict[str, Any],
    ) -> CellRecord:
        """Commit one cell's result atomically (replacing an earlier attempt at the same cell)."""
        record = cell_from_result(run_id, workload, backend, size, params, result)
        with self._transaction() as conn:
            conn.execute(
                f"INSERT OR REPLACE INTO cells ({','.join(CELL_COLUMNS)}) VALUES ({','.join('?' * len(CELL_COLUMNS))})",
                (
                    run_id,
                    workload,
                    backend,
                    size,
                    params_key(params),
                    record.status,
                    record.reason,
                    record.first_call_s,
                    dumps(list(record.samples_s)),
                    dumps(list(record.dispatch_samples_s)),
                    record.loops,
                    dumps(list(record.values)),
                    dumps(list(record.errors)),
                    dumps(record.extras),
                    record.expected_error,
                    dumps(list(record.warnings)),
                    record.peak_rss_bytes,
                    record.peak_device_bytes,
                    record.device,
                    record.backend_version,
                    record.threads,
                    record.finished_at,
                    record.log,
                    _processes_json(record),
                ),
            )
        return record

    def cells(self, run_id: int) -> list[CellRecord]:
        rows = self._conn.execute("SELECT * FROM cells WHERE run_id=?", (run_id,))
        records = [self._cell_record(r) for r in rows]
        # backends in the registry's order (interpreters first), the order every table uses
        return sorted(
            records, key=lambda c: (c.workload, backend_rank(c.backend), c.size, params_key(c.params))
        )

    def cells_where(self, **equal: Any) -> list[CellRecord]:
        """Cells across runs matching column values, oldest run first (for history)."""
        clauses = " AND ".join(f"{column}=?" for column in equal) or "1=1"
        rows = self._conn.execute(
            f"SELECT * FROM cells WHERE {clauses} ORDER BY run_id", tuple(equal.values())
        )
        return [self._cell_record(r) for r in rows]

    def _cell_record(self, row: sqlite3.Row) -> CellRecord:
        return CellRecord(
            run_id=row["run_id"],
            workload=row["workload"],
            backend=row["backend"],
            size=row["size"],
            params=json.loads(row["params"]),
            status=row["status"],
            reason=row["reason"],
            first_call_s=row["first_call_s"],
            samples_s=tuple(json.loads(row["samples_s"])),
            dispatch_samples_s=tuple(json.loads(row["dispatch_samples_s"])),
            loops=row["loops"],
            values=tuple(json.loads(row["vals"])),
            errors=tuple(json.loads(row["errors"])),
            extras=json.loads(row["extras"]),
            expected_error=row["expected_error"],
            warnings=tuple(json.loads(row["warnings"])),
            peak_rss_bytes=row["peak_rss_bytes"],
            peak_device_bytes=row["peak_device_bytes"],
            device=row["device"],
            backend_version=row["backend_version"],
            threads=row["threads"],
            finished_at=row["finished_at"],
            log=row["log"],
            **_processes_fields(row["processes"] if "processes" in row.keys() else None),
        )


def _upgrade(conn: sqlite3.Connection) -> None:
    """Schema 1 -> 2: the `processes` column (old cells keep NULL: one process). A store that cannot
    be written after all (a read-only file system) stays as it is and is read as schema 1."""
    try:
        with conn:
            columns = {r[1] for r in conn.execute("PRAGMA table_info(cells)")}
            if "processes" not in columns:
                conn.execute("ALTER TABLE cells ADD COLUMN processes TEXT")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    except sqlite3.OperationalError:
        pass


def _processes_json(record: CellRecord) -> str | None:
    if not record.sample_process and not record.process_details:
        return None
    return dumps({"sample_process": list(record.sample_process), "workers": list(record.process_details)})


def _processes_fields(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    data = json.loads(text)
    return {
        "sample_process": tuple(data.get("sample_process") or ()),
        "process_details": tuple(data.get("workers") or ()),
    }


def params_key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def cell_from_result(
    run_id: int, workload: str, backend: str, size: int, params: dict[str, Any], result: dict[str, Any]
) -> CellRecord:
    return CellRecord(
        run_id=run_id,
        workload=workload,
        backend=backend,
        size=size,
        params=dict(params),
        status=result["status"],
        reason=result.get("reason"),
        first_call_s=result.get("first_call_s"),
        samples_s=tuple(result.get("samples_s") or ()),
        dispatch_samples_s=tuple(result.get("dispatch_s") or ()),
        loops=result.get("loops"),
        values=tuple(result.get("values") or ()),
        errors=tuple(result.get("errors") or ()),
        extras=dict(result.get("extras") or {}),
        expected_error=result.get("expected_error"),
        warnings=tuple(result.get("warnings") or ()),
        peak_rss_bytes=result.get("peak_rss_bytes"),
        peak_device_bytes=result.get("peak_device_bytes"),
        device=result.get("device"),
        backend_version=result.get("backend_version"),
        threads=result.get("threads"),
        finished_at=now(),
        log=result.get("log"),
        sample_process=tuple(result.get("sample_process") or ()),
        process_details=tuple(result.get("processes") or ()),
    )
