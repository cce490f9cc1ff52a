"""A results store as jitlab wrote it before schema 2 (SQLite only, runs without UUIDs, one machine
per run): main's schema SQL of that time, verbatim, and rows as its `save_cell` wrote them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SCHEMA_V1 = """
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
    PRIMARY KEY (run_id, workload, backend, size, params)
);
"""

MACHINES = [
    {"hostname": "laptop", "cpu": "Old CPU", "cores_logical": 4, "gpus": [], "python": "3.11.7"},
    {"hostname": "server", "cpu": "Big CPU", "cores_logical": 64, "gpus": ["H100"], "python": "3.11.7"},
]


def make_v1_store(path: Path) -> dict[int, list[tuple]]:
    """Two runs on two machines with three cells each; returns {run id: [(backend, size, samples)]}."""
    expected: dict[int, list[tuple]] = {}
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA_V1)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', '1')")
        for run_index, machine in enumerate(MACHINES):
            cursor = conn.execute(
                "INSERT INTO runs (created_at, status, target, workloads, backends, sizes, options, machine)"
                " VALUES (?, 'finished', 'pi', '[\"pi\"]', '[\"numpy\",\"python\"]', '[1000,1000000]', ?, ?)",
                (f"2026-01-0{run_index + 1}T00:00:00+00:00", json.dumps({"threads": 2}), json.dumps(machine)),
            )
            run_id = cursor.lastrowid
            expected[run_id] = []
            for backend, size in [("numpy", 1000), ("numpy", 1000000), ("python", 1000)]:
                samples = [0.001 * (run_index + 1) * (1 + k / 100) for k in range(12)]
                conn.execute(
                    "INSERT OR REPLACE INTO cells VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (run_id, "pi", backend, size, "{}", "ok", None, 0.5, json.dumps(samples), "[]", 10,
                     "[3.14]", "[0.001]", '{"score": [0.99]}', 0.002, "[]", 2**31 + 5, None, "cpu", "2.4.6", 2,
                     "2026-01-01T00:00:01+00:00", None),
                )  # fmt: skip
                expected[run_id].append((backend, size, samples))
    return expected
