"""The results store: runs and their cells, raw samples included, in a SQLite file (the default,
no server) or a PostgreSQL database a team shares, through one SQLAlchemy Core schema.

Each finished cell is committed in its own transaction, so a run killed half way keeps what it
finished and `--resume` can run only what is missing. Every operation is one transaction that can be
repeated safely, so a server that goes away is waited for (`jitlab.store.outages`): the cell being
written stays in memory until the server is back, or the limit passes. Secrets are masked on the way
in (run options, machine metadata, cells' logs and reasons) and on the way out, for stores written
before (`jitlab.secrets`). Runs from several machines writing into one
store at once never mix: each gets its own number from the database and a UUID. A file or database
that is not a jitlab store is never modified: it is rejected before anything is written.

SQLAlchemy is imported when a store is opened, not when this module is, to keep the command line's
start light.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from jitlab.backends.registry import backend_rank
from jitlab.errors import UserError
from jitlab.process_result import CellResult
from jitlab.secrets import mask_secrets
from jitlab.store.cell_rows import cell_from_result, cell_record, cell_row, now
from jitlab.store.outages import Retrying, WaitListener
from jitlab.store.records import CellRecord, RunRecord, dumps
from jitlab.store.urls import StoreLocation, parse_store, scrub
from jitlab.userfiles import writable_folder

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy import Connection, Engine

T = TypeVar("T")

#: seconds a SQLite writer waits for another process's transaction; a PostgreSQL client for a connection
LOCK_TIMEOUT_S = 30
CONNECT_TIMEOUT_S = 10


def resolve_store_path(path: str | os.PathLike | None) -> Path:
    """The SQLite file a `--store` value names (default $JITLAB_STORE or .jitlab/results.sqlite).

    For a database server this is where files beside the store go instead (`.jitlab/results.sqlite`'s
    folder), so callers that put caches or plots beside the store keep working."""
    location = parse_store(path)
    return location.path if location.path is not None else location.local_folder / "results.sqlite"


def params_key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


class Store:
    """A results store. `path` is the SQLite file, or for a server the URL without its password.

    An operation that finds the store unreachable is retried for up to `retry_s` seconds of outage
    (0: not at all), `on_wait` hearing each wait; after that it raises `StoreUnreachable`."""

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        create: bool = True,
        retry_s: float = 0.0,
        on_wait: WaitListener | None = None,
    ):
        self.location: StoreLocation = parse_store(path)
        self.retrying = Retrying(retry_s, on_wait)
        self.path: Path | str = (
            self.location.path if self.location.path is not None else self.location.display
        )
        self.read_only = False
        self._machine_of_run: dict[int, dict[str, Any]] = {}
        if self.location.path is not None:
            self._check_file(create)
        self._engine = self._connect()
        try:
            self._prepare_schema(create)
        except BaseException:
            self._engine.dispose()
            raise

    # -- opening ---------------------------------------------------------------------------------
    def _check_file(self, create: bool) -> None:
        path = self.location.path
        assert path is not None
        if path.is_dir():
            raise UserError(f"store path {path} is a folder: pass a file path with --store")
        if not path.exists():
            if not create:
                raise UserError(f"no results store at {path}: run `jitlab run` first, or pass --store PATH")
            writable_folder(path.parent, "store folder", "pass --store PATH")
        elif not os.access(path, os.W_OK):
            self.read_only = True

    def _connect(self) -> Engine:
        from sqlalchemy import create_engine, event

        if self.location.kind == "sqlite":
            engine = create_engine(self.location.url, connect_args={"timeout": LOCK_TIMEOUT_S})

            # pysqlite begins transactions late and never before DDL: take them over, so a schema
            # upgrade is one transaction and writers queue for the lock at BEGIN instead of failing
            @event.listens_for(engine, "connect")
            def _no_pysqlite_transactions(dbapi_connection, record):  # noqa: ANN001
                dbapi_connection.isolation_level = None

            @event.listens_for(engine, "begin")
            def _begin(conn):  # noqa: ANN001
                immediate = conn.get_execution_options().get("jitlab_write")
                conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

            return engine
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise UserError(
                f"the store {self.location.display} is a PostgreSQL database, which needs psycopg: "
                "pip install 'jitlab[postgres]'"
            ) from None
        return create_engine(
            self.location.url,
            connect_args={"connect_timeout": CONNECT_TIMEOUT_S},
            pool_pre_ping=True,
        )

    def _database_error(self, exc: Exception, doing: str) -> UserError:
        what = getattr(exc, "orig", None) or exc
        message = scrub(
            str(what).strip().splitlines()[0] if str(what).strip() else type(what).__name__, self.location
        )
        if doing == "write":
            return UserError(
                f"cannot write the store {self.location.display}: {message}; pass a writable --store"
            )
        if self.location.is_server:
            return UserError(
                f"cannot {doing} the store {self.location.display}: {message}; "
                "check that the server runs and the URL (user, host, port, database) is right"
            )
        return UserError(
            f"{self.location.path} is not a readable jitlab results store ({message}): "
            "move it away or pass --store PATH"
        )

    def _attempt(self, operation: Callable[[], T], doing: str) -> T:
        """`operation()` (one transaction, safe to repeat), retried while the store is unreachable;
        any other database error is the user's store's fault: one line."""
        from sqlalchemy.exc import DBAPIError

        try:
            return self.retrying.call(
                operation, doing, self.location.display, lambda text: scrub(text, self.location)
            )
        except DBAPIError as exc:
            raise self._database_error(exc, doing) from exc

    def attempt_write(self, operation: Callable[[Connection], T]) -> T:
        """`operation(conn)` in one write transaction, repeated while the store is unreachable."""

        def transaction() -> T:
            with self._write() as conn:
                return operation(conn)

        return self._attempt(transaction, "write")

    def attempt_read(self, operation: Callable[[Connection], T], doing: str = "read") -> T:
        """`operation(conn)` in one read transaction, repeated while the store is unreachable."""

        def transaction() -> T:
            with self._read() as conn:
                return operation(conn)

        return self._attempt(transaction, doing)

    def _prepare_schema(self, create: bool) -> None:
        from jitlab.store import migrations, schema

        def inspect(conn: Connection) -> tuple[set[str], int | None, list]:
            tables = migrations.table_names(conn)
            version = migrations.stored_version(conn) if tables else None
            missing = migrations.missing_columns(conn) if version == schema.SCHEMA_VERSION else []
            return tables, version, missing

        tables, version, missing = self.attempt_read(inspect, "open")
        if tables and (not schema.CORE_TABLES <= tables or version is None):
            raise UserError(
                f"{self.location.display} is a database but not a jitlab results store: pass another --store"
            )
        if version is not None and version > schema.SCHEMA_VERSION:
            raise UserError(
                f"{self.location.display} was written by a newer jitlab (schema {version}, this one knows "
                f"{schema.SCHEMA_VERSION}): upgrade jitlab or pass another --store"
            )
        if version == schema.SCHEMA_VERSION and not missing:
            return
        if not tables and not create:
            raise UserError(f"no results store at {self.location.display}: run `jitlab run` first")
        if self.read_only:
            raise UserError(
                f"the store {self.location.display} (schema {version}) must be upgraded, and it is read-only: "
                "make it writable once or pass another --store"
            )

        def prepare() -> None:
            with self._write() as conn:
                migrations.lock_schema(conn)
                version = migrations.stored_version(conn)  # another process may have done it meanwhile
                if version is None:
                    migrations.create_schema(conn)
                elif version < schema.SCHEMA_VERSION:
                    migrations.upgrade(conn, version)
                migrations.add_missing_columns(conn)

        self._attempt(prepare, "prepare")

    def close(self) -> None:
        self._engine.dispose()

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One transaction holding the write lock; committed at the end, rolled back on error.
        Database errors pass through: `attempt_write` retries or explains them."""
        if self.read_only:
            raise UserError(f"the store {self.location.display} is read-only: pass a writable --store PATH")
        with self._engine.connect().execution_options(jitlab_write=True) as conn, conn.begin():
            yield conn

    def check_writable(self) -> None:
        """Write to the store once (its `last_opened` time), so an unwritable one is refused before
        anything is measured. An upsert: several commands opening one store at once all succeed."""
        from jitlab.store.schema import meta

        if self.location.kind == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        opened = now()
        statement = insert(meta).values(key="last_opened", value=opened)
        statement = statement.on_conflict_do_update(index_elements=["key"], set_={"value": opened})
        self.attempt_write(lambda conn: conn.execute(statement))

    # -- runs ------------------------------------------------------------------------------------
    def create_run(
        self,
        target: str,
        workloads: list[str],
        backends: list[str],
        sizes: list[int] | None,
        options: dict[str, Any],
        machine: dict[str, Any],
        run_uuid: str | None = None,
    ) -> int:
        """A new run (status 'running'); returns its local number. Its UUID is new unless given.
        Options and machine metadata are stored with their secrets masked. Repeated after a lost
        connection, it finds the run its first attempt may have committed (by UUID)."""
        from sqlalchemy import select

        from jitlab.store.schema import runs

        run_uuid = run_uuid or str(uuid.uuid4())
        created_at = now()

        def insert(conn: Connection) -> int:
            found = conn.execute(select(runs.c.id).where(runs.c.uuid == run_uuid)).scalar()
            if found is not None:
                return int(found)
            result = conn.execute(
                runs.insert().values(
                    uuid=run_uuid,
                    created_at=created_at,
                    status="running",
                    target=target,
                    workloads=dumps(workloads),
                    backends=dumps(backends),
                    sizes=dumps(sizes),
                    options=dumps(mask_secrets(options)),
                    machine=dumps(mask_secrets(machine)),
                )
            )
            return int(result.inserted_primary_key[0])

        return self.attempt_write(insert)

    def set_run_status(self, run_id: int, status: str) -> None:
        from jitlab.store.schema import runs

        finished_at = now()
        self.attempt_write(
            lambda conn: conn.execute(
                runs.update().where(runs.c.id == run_id).values(status=status, finished_at=finished_at)
            )
        )

    def resolve_run(self, ref: int | str) -> int:
        """The local number of the run `ref` names: a local number, or a prefix of its UUID."""
        from sqlalchemy import select

        from jitlab.store.schema import runs

        text = str(ref).strip()
        prefix = text.lower()

        def lookup(conn: Connection) -> tuple[bool, list]:
            if text.isdigit() and conn.execute(select(runs.c.id).where(runs.c.id == int(text))).first():
                return True, []
            if len(prefix) >= 4 and all(c in "0123456789abcdef-" for c in prefix):
                return False, list(
                    conn.execute(
                        select(runs.c.id, runs.c.uuid).where(runs.c.uuid.startswith(prefix, autoescape=True))
                    ).all()
                )
            return False, []

        by_number, found = self.attempt_read(lookup)
        if by_number:
            return int(text)
        if len(found) == 1:
            return int(found[0][0])
        if len(found) > 1:
            raise UserError(
                f"run {text!r} is ambiguous: it begins {len(found)} run ids "
                f"({', '.join(r[1][:13] for r in found[:4])}...): give more of the UUID"
            )
        raise UserError(
            f"no run {text} in {self.location.display}: `jitlab runs` lists them "
            "(a run is named by its number or the start of its UUID, 4 characters at least)"
        )

    def run(self, run_id: int | str) -> RunRecord:
        from sqlalchemy import select

        from jitlab.store.schema import runs

        number = self.resolve_run(run_id)
        row = self.attempt_read(
            lambda conn: conn.execute(select(runs).where(runs.c.id == number)).mappings().one()
        )
        return self._run_record(row)

    def runs(self) -> list[RunRecord]:
        from sqlalchemy import select

        from jitlab.store.schema import runs

        rows = self.attempt_read(lambda conn: conn.execute(select(runs).order_by(runs.c.id)).mappings().all())
        return [self._run_record(r) for r in rows]

    def run_by_uuid(self, run_uuid: str) -> RunRecord | None:
        from sqlalchemy import select

        from jitlab.store.schema import runs

        row = self.attempt_read(
            lambda conn: conn.execute(select(runs).where(runs.c.uuid == run_uuid)).mappings().first()
        )
        return self._run_record(row) if row else None

    def _run_record(self, row: Any) -> RunRecord:
        sizes = json.loads(row["sizes"]) if row["sizes"] else None
        return RunRecord(
            run_id=row["id"],
            created_at=row["created_at"],
            finished_at=row["finished_at"],
            status=row["status"],
            target=row["target"],
            workloads=tuple(json.loads(row["workloads"])),
            backends=tuple(json.loads(row["backends"])),
            sizes=tuple(sizes) if sizes else None,
            # masked again: a store written before secrets were masked may hold them
            options=mask_secrets(json.loads(row["options"])),
            machine=mask_secrets(json.loads(row["machine"])),
            store_path=str(self.path),
            uuid=row["uuid"],
            output_folder=str(self.location.local_folder),
        )

    # -- cells -----------------------------------------------------------------------------------
    def save_cell(
        self,
        run_id: int,
        workload: str,
        backend: str,
        size: int,
        params: dict[str, Any],
        result: CellResult | Mapping[str, Any],
        machine: dict[str, Any] | None = None,
    ) -> CellRecord:
        """Commit one cell's result atomically (replacing an earlier attempt at the same cell on the
        same machine). `machine` is the metadata of the machine that measured it (default: the run's).
        While the store is unreachable the cell waits here, in memory, up to the retry limit."""
        record = cell_from_result(run_id, workload, backend, size, params, result, machine)
        (stored,) = self.attempt_write(lambda conn: self.insert_cells([record], conn))
        return stored

    def insert_cells(self, records: list[CellRecord], conn: Connection) -> list[CellRecord]:
        """Store finished cells in the caller's write transaction, each replacing an earlier attempt at
        the same cell on the same machine; returns them with their machine filled in."""
        from dataclasses import replace

        from jitlab.store.schema import cells

        stored = []
        for record in records:
            machine_id, info = self._machine_of(conn, record)
            key = params_key(record.params)
            conn.execute(
                cells.delete().where(
                    (cells.c.run_id == record.run_id)
                    & (cells.c.workload == record.workload)
                    & (cells.c.backend == record.backend)
                    & (cells.c.size == record.size)
                    & (cells.c.params == key)
                    & (cells.c.machine_id == machine_id)
                )
            )
            conn.execute(cells.insert().values(**cell_row(record), params=key, machine_id=machine_id))
            stored.append(replace(record, machine=info))
        return stored

    def _machine_of(self, conn: Connection, record: CellRecord) -> tuple[int, dict[str, Any]]:
        """The machines row of the cell's machine: its own metadata, else its run's."""
        from sqlalchemy import select

        from jitlab.store import migrations
        from jitlab.store.schema import runs

        info = record.machine
        if not info:
            if record.run_id not in self._machine_of_run:
                text = conn.execute(select(runs.c.machine).where(runs.c.id == record.run_id)).scalar_one()
                self._machine_of_run[record.run_id] = json.loads(text)
            info = self._machine_of_run[record.run_id]
        info = mask_secrets(dict(info))
        # not cached: a rolled-back transaction may have inserted the row
        return migrations.ensure_machine(conn, info), info

    def cells(self, run_id: int | str) -> list[CellRecord]:
        number = run_id if isinstance(run_id, int) else self.resolve_run(run_id)
        records = self._select_cells(run_id=number)
        # backends in the registry's order (interpreters first), the order every table uses
        return sorted(
            records,
            key=lambda c: (
                c.workload,
                backend_rank(c.backend),
                c.size,
                params_key(c.params),
                machine_sort_key(c),
            ),
        )

    def cells_where(self, **equal: Any) -> list[CellRecord]:
        """Cells across runs matching column values, oldest run first (for history)."""
        return sorted(self._select_cells(**equal), key=lambda c: c.run_id)

    def _select_cells(self, **equal: Any) -> list[CellRecord]:
        from sqlalchemy import select

        from jitlab.store.schema import cells, machines

        query = select(cells, machines.c.info.label("machine_info")).join(
            machines, machines.c.id == cells.c.machine_id
        )
        for column, value in equal.items():
            query = query.where(cells.c[column] == value)
        rows = self.attempt_read(lambda conn: conn.execute(query.order_by(cells.c.run_id)).mappings().all())
        return [cell_record(row) for row in rows]


def machine_sort_key(cell: CellRecord) -> str:
    from jitlab.store.identity import machine_label

    return machine_label(cell.machine)
