"""A store written before schema 2 (SQLite, runs without UUIDs, one machine per run) opens and is
upgraded in place, keeping every run, cell and sample."""

from __future__ import annotations

import sqlite3

from schema_v1 import MACHINES, make_v1_store

from jitlab.store import Store
from jitlab.store.identity import machine_label


def test_a_schema_1_store_is_upgraded_in_place(tmp_path):
    path = tmp_path / "old.sqlite"
    expected = make_v1_store(path)
    store = Store(path, create=False)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("2",)
        assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")} >= {
            "meta", "runs", "cells", "machines"
        }  # fmt: skip
        assert not {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE '%_v1'")}
    runs = store.runs()
    assert [r.run_id for r in runs] == list(expected)
    assert len({r.uuid for r in runs}) == 2
    for run, machine in zip(runs, MACHINES):
        assert run.machine == machine and run.options == {"threads": 2} and run.sizes == (1000, 1000000)
        cells = store.cells(run.run_id)
        got = sorted((c.backend, c.size, list(c.samples_s)) for c in cells)
        assert got == sorted((b, n, s) for b, n, s in expected[run.run_id])
        for cell in cells:
            assert cell.machine == machine  # the run's machine became each cell's
            assert cell.loops == 10 and cell.extras == {"score": [0.99]} and cell.peak_rss_bytes == 2**31 + 5
            assert cell.values == (3.14,) and cell.backend_version == "2.4.6" and cell.first_call_s == 0.5
            assert cell.timing_method is None  # not recorded before schema 2 (a column added since)
    # a new run gets the next number; the upgrade is done once
    uuids = [r.uuid for r in runs]
    again = Store(path)
    new = again.create_run("pi", ["pi"], [], None, {}, MACHINES[0])
    assert new == 3 and [r.uuid for r in again.runs()[:2]] == uuids
    assert {machine_label(c.machine) for c in again.cells(1)} == {machine_label(MACHINES[0])}


def test_commands_work_on_an_upgraded_store(tmp_path, jitlab_cli):
    path = tmp_path / "old.sqlite"
    make_v1_store(path)
    runs = jitlab_cli("runs", "--store", str(path))
    assert runs.returncode == 0, runs.stderr
    show = jitlab_cli("show", "2", "--store", str(path))
    assert show.returncode == 0 and "numpy" in show.stdout
    history = jitlab_cli("history", "pi", "--backend", "numpy", "--store", str(path), "--json")
    assert history.returncode == 0, history.stderr
    refused = jitlab_cli("compare", "1", "2", "--store", str(path))  # laptop against server
    assert refused.returncode == 2 and "different machines" in refused.stderr
    across = jitlab_cli("compare", "1", "2", "--across-machines", "--store", str(path))
    assert across.returncode == 0 and "across machines" in across.stdout
