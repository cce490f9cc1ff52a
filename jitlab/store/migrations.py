"""Creating a store's schema and upgrading an older one in place.

Every step runs in one transaction that holds the store's write lock (SQLite: BEGIN IMMEDIATE;
PostgreSQL: a transaction-scoped advisory lock), so two jitlab processes opening an old or empty
store at once upgrade it once, and a step that fails leaves the store as it was.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Connection, inspect, select, text

from jitlab.store import schema

#: an arbitrary constant: the key of PostgreSQL's advisory lock for schema changes
_SCHEMA_LOCK_KEY = 0x6A69746C6162  # "jitlab"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def machine_digest(info: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(info).encode()).hexdigest()


#: namespace of run UUIDs derived from a run's content (runs stored before runs had UUIDs)
_RUN_NAMESPACE = uuid.UUID("5b0e4a52-7f55-4b8e-9d4c-6a6974c61b00")


def derived_run_uuid(
    created_at: str, target: str, machine: dict[str, Any], cells: Iterable[tuple[str, str, int, Any, list]]
) -> str:
    """A UUID for a run that has none, from what it is: its start, target, machine and every cell's
    (workload, backend, size, params, samples). The same run upgraded from a schema-1 store or read
    from an old export gets the same UUID everywhere, so importing it twice imports it once."""
    lines = [created_at, target, canonical_json(machine)]
    lines += sorted(
        f"{w}|{b}|{n}|{canonical_json(p)}|{canonical_json([float(x) for x in samples])}"
        for w, b, n, p, samples in cells
    )
    return str(uuid.uuid5(_RUN_NAMESPACE, "\n".join(lines)))


def content_run_uuid(kind: str, content: bytes) -> str:
    """A UUID for a run read from another tool's file (`kind`, e.g. "pyperf"), from the file's bytes:
    the same file imported twice, into one store or two, is one run."""
    digest = hashlib.sha256(content).hexdigest()
    return str(uuid.uuid5(_RUN_NAMESPACE, f"{kind}\n{digest}"))


def table_names(conn: Connection) -> set[str]:
    return set(inspect(conn).get_table_names())


def stored_version(conn: Connection) -> int | None:
    """The schema version written in `meta`, None when the database has no jitlab tables."""
    if "meta" not in table_names(conn):
        return None
    row = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).first()
    return int(row[0]) if row else None


def missing_columns(conn: Connection) -> list[tuple[str, Any]]:
    """(table, Column) of the current schema that an existing store lacks (nullable ones only)."""
    inspector = inspect(conn)
    missing = []
    for table in schema.metadata.sorted_tables:
        if not inspector.has_table(table.name):
            continue
        present = {c["name"] for c in inspector.get_columns(table.name)}
        missing += [(table.name, c) for c in table.columns if c.name not in present and c.nullable]
    return missing


def lock_schema(conn: Connection) -> None:
    """Hold the schema lock for the rest of this transaction (SQLite's BEGIN IMMEDIATE already does)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK_KEY})


def create_schema(conn: Connection) -> None:
    schema.metadata.create_all(conn)
    conn.execute(schema.meta.insert().values(key="schema_version", value=str(schema.SCHEMA_VERSION)))


def add_missing_columns(conn: Connection) -> list[str]:
    """Add nullable columns defined since the store was made (no version step needed for those)."""
    added = []
    for table, column in missing_columns(conn):
        kind = column.type.compile(dialect=conn.dialect)
        conn.exec_driver_sql(f'ALTER TABLE {table} ADD COLUMN "{column.name}" {kind}')
        added.append(f"{table}.{column.name}")
    return added


def _v1_to_v2(conn: Connection) -> None:
    """Runs get a UUID; the run's machine becomes each of its cells' machine (schema 1 knew one)."""
    conn.exec_driver_sql("ALTER TABLE cells RENAME TO cells_v1")
    conn.exec_driver_sql("ALTER TABLE runs RENAME TO runs_v1")
    schema.metadata.create_all(conn, tables=[schema.runs, schema.machines, schema.cells])
    old_runs = conn.exec_driver_sql("SELECT * FROM runs_v1 ORDER BY id").mappings().all()
    # the columns schema 1 had: nullable columns added since (`processes`: one process, `timing_method`)
    # stay NULL
    old_columns = {c["name"] for c in inspect(conn).get_columns("cells_v1")}
    cell_columns = [c.name for c in schema.cells.columns if c.name != "machine_id" and c.name in old_columns]
    listed = ", ".join(cell_columns)
    for row in old_runs:
        cells = conn.exec_driver_sql(
            "SELECT workload, backend, size, params, samples_s FROM cells_v1 WHERE run_id = ?", (row["id"],)
        ).all()
        run_uuid = derived_run_uuid(
            row["created_at"],
            row["target"],
            json.loads(row["machine"]),
            [(w, b, n, json.loads(p), json.loads(s)) for w, b, n, p, s in cells],
        )
        conn.execute(schema.runs.insert().values(**dict(row), uuid=run_uuid))
        machine_id = ensure_machine(conn, json.loads(row["machine"]))
        conn.execute(
            text(
                f"INSERT INTO cells ({listed}, machine_id) SELECT {listed}, :machine_id "
                "FROM cells_v1 WHERE run_id = :run_id"
            ),
            {"machine_id": machine_id, "run_id": row["id"]},
        )
    conn.exec_driver_sql("DROP TABLE cells_v1")
    conn.exec_driver_sql("DROP TABLE runs_v1")


#: version N -> the step that turns a version-N store into version N + 1
STEPS: dict[int, Callable[[Connection], None]] = {1: _v1_to_v2}


def upgrade(conn: Connection, version: int) -> None:
    """Bring a store of `version` to the current schema, step by step, in the caller's transaction."""
    while version < schema.SCHEMA_VERSION:
        STEPS[version](conn)
        version += 1
    conn.execute(schema.meta.update().where(schema.meta.c.key == "schema_version").values(value=str(version)))


def ensure_machine(conn: Connection, info: dict[str, Any]) -> int:
    """The id of the `machines` row holding exactly `info`, inserting it if no writer has yet."""
    digest = machine_digest(info)
    table = schema.machines
    found = conn.execute(select(table.c.id).where(table.c.digest == digest)).scalar()
    if found is not None:
        return int(found)
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    conn.execute(
        insert(table)
        .values(digest=digest, info=canonical_json(info))
        .on_conflict_do_nothing(index_elements=["digest"])
    )
    return int(conn.execute(select(table.c.id).where(table.c.digest == digest)).scalar_one())
