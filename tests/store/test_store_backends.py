"""The results store on SQLite and on a real PostgreSQL server (started by the tests): the same
behaviour on both, concurrent writers, run UUIDs, and machines per cell."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jitlab.errors import UserError
from jitlab.store import Store
from jitlab.store.identity import machine_label

WRITER = Path(__file__).with_name("concurrent_writer.py")
MACHINE = {"hostname": "laptop", "cpu": "Some CPU", "cores_logical": 8, "gpus": []}
RESULT = {
    "status": "ok",
    "first_call_s": 0.25,
    "samples_s": [1e-3, 1.1e-3, 0.9e-3],
    "dispatch_s": [1e-4],
    "loops": 7,
    "values": [3.14, None],
    "errors": [0.001, 0.002],
    "extras": {"score": [0.99, 0.98]},
    "expected_error": 0.0016,
    "warnings": ["noisy"],
    "peak_rss_bytes": 2**40,
    "peak_device_bytes": None,
    "device": "cuda:0 (NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB, CUDA runtime 13.0)",
    "timing_method": "cuda events, L2 flushed before each call",
    "backend_version": "2.4.6",
    "threads": 4,
    "log": "last line",
}


def test_cells_round_trip_with_their_machine(store_url):
    store = Store(store_url)
    run_id = store.create_run("pi", ["pi"], ["numpy"], [10**10], {"threads": 4}, MACHINE)
    stored = store.save_cell(run_id, "pi", "numpy", 10**10, {"k": 2}, RESULT)
    other = {**MACHINE, "name": "gpu-box"}
    store.save_cell(run_id, "pi", "numpy", 10**10, {"k": 2}, {**RESULT, "samples_s": [5e-4]}, machine=other)
    again = Store(store_url, create=False)
    cells = again.cells(run_id)
    assert len(cells) == 2
    mine = next(c for c in cells if machine_label(c.machine) != "gpu-box")
    assert mine.machine == MACHINE == stored.machine  # a cell without a machine of its own gets the run's
    assert mine.size == 10**10 and mine.params == {"k": 2} and mine.samples_s == (1e-3, 1.1e-3, 0.9e-3)
    assert mine.values == (3.14, None) and mine.extras == {"score": [0.99, 0.98]} and mine.loops == 7
    assert mine.peak_rss_bytes == 2**40 and mine.warnings == ("noisy",) and mine.log == "last line"
    assert mine.device == RESULT["device"] and mine.timing_method == RESULT["timing_method"]
    assert next(c for c in cells if c is not mine).samples_s == (5e-4,)
    # measuring the same cell on the same machine again replaces it
    store.save_cell(run_id, "pi", "numpy", 10**10, {"k": 2}, {"status": "failed", "reason": "boom"})
    assert sorted(c.status for c in again.cells(run_id)) == ["failed", "ok"]


def test_runs_have_uuids_and_are_found_by_number_or_uuid_prefix(store_url):
    store = Store(store_url)
    first = store.create_run("pi", ["pi"], [], None, {}, MACHINE)
    second = store.create_run("pi", ["pi"], [], None, {}, MACHINE)
    runs = store.runs()
    assert [r.run_id for r in runs] == [first, second]
    uuids = [r.uuid for r in runs]
    assert len(set(uuids)) == 2 and all(len(u) == 36 for u in uuids)
    assert store.run(str(second)).uuid == uuids[1]
    assert store.run(uuids[1][:8]).run_id == second
    assert store.cells(uuids[0][:8]) == []
    with pytest.raises(UserError, match="no run 99"):
        store.run(99)
    with pytest.raises(UserError, match="no run zz"):
        store.run("zz")


def test_concurrent_writers_lose_nothing_and_never_mix(store_url):
    """Four processes open the same fresh store at once (one creates the schema) and each writes its
    own run of 100 cells, one transaction per cell."""
    writers = [
        subprocess.Popen(
            [sys.executable, str(WRITER), store_url, tag, "100"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in "abcd"
    ]
    run_ids = {}
    for tag, writer in zip("abcd", writers):
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
        run_ids[tag] = int(out.strip())
    assert len(set(run_ids.values())) == 4
    store = Store(store_url, create=False)
    for tag, run_id in run_ids.items():
        cells = store.cells(run_id)
        assert sorted(c.size for c in cells) == list(range(1, 101))  # each cell once
        assert {c.params["tag"] for c in cells} == {tag}  # and only this writer's
        assert {c.machine["hostname"] for c in cells} == {f"host-{tag}"}
        assert store.run(run_id).status == "finished"


def test_a_column_added_since_is_added_to_an_older_store(store_url):
    from sqlalchemy import create_engine, inspect

    store = Store(store_url)
    old_run = store.create_run("pi", ["pi"], [], None, {}, MACHINE)
    store.save_cell(old_run, "pi", "numpy", 1, {}, RESULT)
    store.close()
    url = Store(store_url).location.url
    engine = create_engine(url)
    with engine.begin() as conn:  # a store of a jitlab without these columns
        conn.exec_driver_sql("ALTER TABLE cells DROP COLUMN log")
        conn.exec_driver_sql("ALTER TABLE cells DROP COLUMN timing_method")
    assert not {"log", "timing_method"} & {c["name"] for c in inspect(engine).get_columns("cells")}
    store = Store(store_url, create=False)  # opening adds the nullable columns back
    assert {"log", "timing_method"} <= {c["name"] for c in inspect(engine).get_columns("cells")}
    [old] = store.cells(old_run)
    assert old.log is None and old.timing_method is None and old.samples_s == tuple(RESULT["samples_s"])
    run_id = store.create_run("pi", ["pi"], [], None, {}, MACHINE)
    saved = store.save_cell(run_id, "pi", "numpy", 1, {}, RESULT)
    assert saved.log == "last line" and saved.timing_method == RESULT["timing_method"]
    assert store.cells(run_id)[0].timing_method == RESULT["timing_method"]
    engine.dispose()


def test_a_newer_or_foreign_database_is_refused(store_url):
    from sqlalchemy import create_engine

    url = Store(store_url).location.url
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(UserError, match="newer jitlab"):
        Store(store_url, create=False)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE meta")
    with pytest.raises(UserError, match="not a jitlab results store"):
        Store(store_url)
    engine.dispose()
