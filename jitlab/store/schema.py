"""The store's tables, as SQLAlchemy Core definitions: one schema for SQLite and PostgreSQL.

Lists and dictionaries (samples, parameters, machine metadata) are JSON text, so both databases hold
the same bytes and an export is a plain read. Version history (see `jitlab.store.migrations`):

1. runs (local integer id) and cells keyed by (run, workload, backend, size, params).
2. runs get a globally unique id (`uuid`); machines get a table of their own and every cell points
   at the machine that measured it (a run across several machines has one column per machine), so
   the machine joins the cells' primary key.

A new nullable column needs no version: `migrations.add_missing_columns` adds it to older stores.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
)

SCHEMA_VERSION = 2

metadata = MetaData()

meta = Table(
    "meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uuid", Text, nullable=False, unique=True),
    Column("created_at", Text, nullable=False),
    Column("finished_at", Text),
    Column("status", Text, nullable=False),
    Column("target", Text, nullable=False),
    Column("workloads", Text, nullable=False),
    Column("backends", Text, nullable=False),
    Column("sizes", Text),
    Column("options", Text, nullable=False),
    Column("machine", Text, nullable=False),
    sqlite_autoincrement=True,  # never reuse a deleted run's number (schema 1 did the same)
)

machines = Table(
    "machines",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    #: sha256 of the canonical JSON of `info`: equal metadata is one row, whoever writes it first
    Column("digest", Text, nullable=False, unique=True),
    Column("info", Text, nullable=False),
)

cells = Table(
    "cells",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id"), nullable=False),
    Column("workload", Text, nullable=False),
    Column("backend", Text, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("params", Text, nullable=False),
    Column("machine_id", Integer, ForeignKey("machines.id"), nullable=False),
    Column("status", Text, nullable=False),
    Column("reason", Text),
    Column("first_call_s", Float),
    Column("samples_s", Text, nullable=False),
    Column("dispatch_samples_s", Text, nullable=False),
    Column("loops", BigInteger),
    Column("vals", Text, nullable=False),
    Column("errors", Text, nullable=False),
    Column("extras", Text, nullable=False),
    Column("expected_error", Float),
    Column("warnings", Text, nullable=False),
    Column("peak_rss_bytes", BigInteger),
    Column("peak_device_bytes", BigInteger),
    Column("device", Text),
    Column("backend_version", Text),
    Column("threads", Integer),
    Column("finished_at", Text, nullable=False),
    Column("log", Text),
    # JSON {"sample_process": [...], "workers": [...]}: the worker process of each sample and one record
    # per process; NULL for cells measured in one process before processes were recorded
    Column("processes", Text),
    #: how the samples were timed: "host clock", or "cuda events" (with the L2 flush, if asked)
    Column("timing_method", Text),
    #: JSON list: CPU seconds per call of each sample, parallel to samples_s (NULL: not recorded, or
    #: a backend running several threads)
    Column("cpu_samples_s", Text),
    #: JSON {"per_call": [...], "process": [...]}: instructions per call counted under Valgrind
    #: (`jitlab run --measure instructions`); NULL for a wall-time cell
    Column("instructions", Text),
    PrimaryKeyConstraint("run_id", "workload", "backend", "size", "params", "machine_id", name="cells_pkey"),
)

#: the tables jitlab needs to call a database its store (schema 1 had no `machines`)
CORE_TABLES = {"meta", "runs", "cells"}
