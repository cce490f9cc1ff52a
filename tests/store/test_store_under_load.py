"""One store under load, on SQLite and on a real PostgreSQL server: four `jitlab run` commands and a
`jitlab import` of another store's runs at once. Every cell is present exactly once, the run numbers
and UUIDs are unique, and nothing is half-written (every run finished, with all its cells)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter

from jitlab_testing import DATA

from jitlab.errors import UserError
from jitlab.store import Store

WORKLOAD = str(DATA / "store_workload.py")
SIZES = [1, 2, 3, 4]
RUNS = 4
IMPORTED_RUNS, IMPORTED_CELLS = 2, 150


def source_store(path: str) -> dict[str, int]:
    """A store of another machine with IMPORTED_RUNS runs of IMPORTED_CELLS cells; their UUIDs."""
    store = Store(path)
    uuids = {}
    for index in range(IMPORTED_RUNS):
        run_id = store.create_run("elsewhere", ["w"], ["python"], None, {}, {"hostname": f"far-{index}"})
        for size in range(1, IMPORTED_CELLS + 1):
            store.save_cell(run_id, "w", "python", size, {}, {"status": "ok", "samples_s": [size * 1e-6]})
        store.set_run_status(run_id, "finished")
        uuids[store.run(run_id).uuid] = IMPORTED_CELLS
    store.close()
    return uuids


def jitlab(*args: str, cwd) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "jitlab", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_a_cell(url: str, timeout: float = 300) -> None:
    """Until one of the runs has stored a cell (so the import meets runs that are writing)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            store = Store(url, create=False)
            found = any(store.cells(run.run_id) for run in store.runs())
            store.close()
        except UserError:  # no store yet
            found = False
        if found:
            return
        assert time.monotonic() < deadline, "no run stored a cell"
        time.sleep(0.2)


def test_four_runs_and_an_import_at_once_lose_and_duplicate_nothing(store_url, tmp_path):
    imported = source_store(str(tmp_path / "elsewhere.sqlite"))
    sizes = ",".join(map(str, SIZES))
    args = [
        "--backends",
        "python",
        "--sizes",
        sizes,
        "--processes",
        "1",
        "--budget",
        "0.05",
        "--threads",
        "1",
    ]
    runs = [
        jitlab("run", WORKLOAD, *args, "--no-plot", "--json", "--store", store_url, cwd=tmp_path)
        for _ in range(RUNS)
    ]
    wait_for_a_cell(store_url)
    importer = jitlab(
        "import", str(tmp_path / "elsewhere.sqlite"), "--json", "--store", store_url, cwd=tmp_path
    )
    numbers = []
    for process in runs:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
        document = json.loads(out)
        numbers.append(document["run_id"])
        assert [c["size"] for c in document["cells"]] == SIZES
    out, err = importer.communicate(timeout=600)
    assert importer.returncode == 0, err
    report = json.loads(out)
    assert {r["uuid"] for r in report["imported"]} == set(imported) and not report["skipped"]
    numbers += [r["local_id"] for r in report["imported"]]

    store = Store(store_url, create=False)
    stored = store.runs()
    assert sorted(numbers) == sorted(r.run_id for r in stored) and len(set(numbers)) == RUNS + IMPORTED_RUNS
    assert len({r.uuid for r in stored}) == len(stored)
    all_cells = []
    for run in stored:
        cells = store.cells(run.run_id)
        all_cells += cells
        assert run.status == "finished", run  # nothing half-written
        if run.uuid in imported:
            assert sorted(c.size for c in cells) == list(range(1, IMPORTED_CELLS + 1))
            assert all(c.samples_s == (c.size * 1e-6,) for c in cells)
        else:
            assert sorted(c.size for c in cells) == SIZES
            assert all(c.ok and c.samples_s for c in cells), [(c.size, c.status, c.reason) for c in cells]
    keys = Counter((c.run_id, c.workload, c.backend, c.size, json.dumps(c.params)) for c in all_cells)
    assert len(all_cells) == RUNS * len(SIZES) + IMPORTED_RUNS * IMPORTED_CELLS
    assert max(keys.values()) == 1  # no cell twice
