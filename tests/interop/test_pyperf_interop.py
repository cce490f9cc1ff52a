"""pyperf's JSON both ways, checked with the real pyperf: `jitlab export --format pyperf` is read by
`python -m pyperf show/stats/compare_to`, and `jitlab import` brings pyperf's own files into the store."""

from __future__ import annotations

import json
import subprocess
import sys

import pyperf
import pytest

from jitlab.interop.pyperf import benchmark_name, run_from_pyperf
from jitlab.store import Store


def pyperf_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pyperf", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    from jitlab_testing import run_jitlab

    store = tmp_path_factory.mktemp("pyperf") / "s.sqlite"
    # a budget that pays for several worker processes per cell (each becomes a pyperf run)
    for _ in range(2):
        done = run_jitlab(
            "run", "pi", "--backends", "numpy,python", "--sizes", "1e3,2e3", "--budget", "1",
            "--threads", "1", "--no-plot", "--store", str(store), "--machine", "box",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    return store


def export(jitlab_cli, store, run_id, path):
    done = jitlab_cli("export", str(run_id), "--format", "pyperf", "-o", str(path), "--store", str(store))
    assert done.returncode == 0, done.stderr
    return path


def test_pyperf_reads_the_export(two_runs, jitlab_cli, tmp_path):
    path = export(jitlab_cli, two_runs, 1, tmp_path / "run1.json")
    suite = pyperf.BenchmarkSuite.load(str(path))
    cells = {benchmark_name(c): c for c in Store(two_runs).cells(1) if c.ok}
    assert set(suite.get_benchmark_names()) == set(cells) == {
        "pi/numpy/n=1000", "pi/numpy/n=2000", "pi/python/n=1000", "pi/python/n=2000",
    }  # fmt: skip
    for name, cell in cells.items():
        bench = suite.get_benchmark(name)
        assert bench.get_values() == cell.samples_s and bench.get_unit() == "second"
        assert bench.get_loops() == cell.loops
        # one pyperf run per worker process of the cell, the cold first call as the first run's warm-up
        runs = bench.get_runs()
        assert len(runs) == cell.processes
        assert [list(r.values) for r in runs] == [
            [v for v, p in zip(cell.samples_s, cell.sample_process or [0] * len(cell.samples_s)) if p == k]
            for k in sorted(set(cell.sample_process or [0]))
        ]
        assert runs[0].warmups == ((1, cell.first_call_s),) and all(not r.warmups for r in runs[1:])
        assert max(r.get_metadata()["mem_max_rss"] for r in runs) == cell.peak_rss_bytes
    assert any(c.processes > 1 for c in cells.values())  # the export was tried on several processes
    assert suite.get_metadata()["jitlab_cells_without_measurement"] == 0
    shown = pyperf_cli("show", str(path))
    assert shown.returncode == 0 and "pi/numpy/n=1000" in shown.stdout and "Mean +- std dev" in shown.stdout
    stats = pyperf_cli("stats", str(path))
    assert (
        stats.returncode == 0
        and "Number of benchmarks: 4" in stats.stdout
        and "Raw value minimum" in stats.stdout
    )
    other = export(jitlab_cli, two_runs, 2, tmp_path / "run2.json")
    compared = pyperf_cli("compare_to", str(path), str(other))
    assert compared.returncode == 0, compared.stderr
    assert "pi/python/n=2000" in compared.stdout and "Mean +- std dev" in compared.stdout


def test_round_trip_through_pyperf_keeps_the_cells(two_runs, jitlab_cli, tmp_path):
    path = export(jitlab_cli, two_runs, 2, tmp_path / "run2.json")
    imported = jitlab_cli("import", str(path), "--store", str(tmp_path / "new.sqlite"), "--json")
    assert imported.returncode == 0, imported.stderr
    data = json.loads(imported.stdout)
    (entry,) = data["imported"]
    assert data["schema"] == "jitlab.import/1" and entry["local_id"] == 1 and entry["format"] == "pyperf"
    assert list(data["machines"]) == ["box"]
    original = {(c.workload, c.backend, c.size): c for c in Store(two_runs).cells(2) if c.ok}
    copy = {(c.workload, c.backend, c.size): c for c in Store(tmp_path / "new.sqlite").cells(1)}
    assert set(copy) == set(original)
    for key, cell in copy.items():
        assert cell.samples_s == original[key].samples_s and cell.first_call_s == original[key].first_call_s
        assert (
            cell.sample_process == original[key].sample_process and cell.processes == original[key].processes
        )
        assert cell.noise_floor == original[key].noise_floor
        assert cell.loops == original[key].loops and cell.peak_rss_bytes == original[key].peak_rss_bytes
        assert cell.device == original[key].device == "cpu"
        assert cell.timing_method == original[key].timing_method == "host clock"
    run = Store(tmp_path / "new.sqlite").run(1)
    assert run.target == "pi" and run.machine["name"] == "box"  # the machine travels with the file
    compared = jitlab_cli("compare", "1", "1", "--store", str(tmp_path / "new.sqlite"))
    assert compared.returncode == 0


def test_import_of_pyperf_own_files(jitlab_cli, tmp_path):
    path = tmp_path / "timeit.json.gz"  # pyperf compresses files whose name ends with .gz
    done = pyperf_cli(
        "timeit", "--processes", "2", "--values", "3", "--loops", "100", "--warmups", "1",
        "-o", str(path), "-s", "x = list(range(1000))", "sum(x)",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    store = tmp_path / "s.sqlite"
    imported = jitlab_cli("import", str(path), "--machine", "laptop", "--store", str(store))
    assert imported.returncode == 0, imported.stderr
    assert "imported pyperf run" in imported.stdout and "as run 1: " in imported.stdout
    assert "1 cells" in imported.stdout
    (cell,) = Store(store).cells(1)
    bench = pyperf.BenchmarkSuite.load(str(path)).get_benchmarks()[0]
    assert (cell.workload, cell.backend, cell.size) == (bench.get_name(), "pyperf", 1)
    assert sorted(cell.samples_s) == sorted(bench.get_values()) and len(cell.samples_s) == 6
    assert cell.processes == 2 and cell.sample_process == (0, 0, 0, 1, 1, 1)  # pyperf's two worker processes
    assert cell.loops == 100 and cell.first_call_s is None
    run = Store(store).run(1)
    assert run.machine["name"] == "laptop" and run.machine["cpu"] == bench.get_metadata()["cpu_model_name"]
    again = jitlab_cli("import", str(path), "--store", str(store))
    assert again.returncode == 0 and "already here as run 1" in again.stdout, again.stdout
    assert "0 imported, 1 skipped" in again.stdout and len(Store(store).runs()) == 1
    shown = jitlab_cli("show", "1", "--store", str(store))
    assert shown.returncode == 0 and "pyperf" in shown.stdout


def test_files_that_are_not_pyperf_are_refused_before_anything_is_stored(jitlab_cli, tmp_path):
    store = tmp_path / "s.sqlite"
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    (tmp_path / "old.json").write_text('{"version": 5, "benchmarks": []}')
    for name, message in (
        ("notes.json", "not a format jitlab imports"),
        ("old.json", "jitlab reads format 1.0"),
        ("missing.json", "does not exist"),
    ):
        done = jitlab_cli("import", str(tmp_path / name), "--store", str(store))
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not store.exists() or Store(store).runs() == []


def test_run_from_pyperf_is_plain_records():
    suite = {
        "version": "1.0",
        "metadata": {"cpu_model_name": "Some CPU", "cpu_count": 8, "hostname": "h"},
        "benchmarks": [
            {
                "metadata": {"name": "bm", "loops": 4, "unit": "second"},
                "runs": [{"values": [1e-3, 2e-3]}, {"warmups": [[4, 1e-3]]}],
            }
        ],
    }
    records = run_from_pyperf(suite, "f.json")
    (cell,) = records["cells"]
    assert cell["result"]["samples_s"] == [1e-3, 2e-3] and cell["result"]["loops"] == 4
    assert records["machine"]["cpu"] == "Some CPU" and records["machine"]["cores_logical"] == 8


def test_a_process_measured_again_keeps_its_number_through_pyperf(jitlab_cli, tmp_path):
    """A slow spell's process measured again after the rounds replaces it (processes 0, 2, 3 hold
    the samples, process 1 was replaced by 3): jitlab's pyperf export names each run's process, and
    the import keeps those numbers instead of counting runs (which gave 0, 1, 2)."""
    from jitlab.store.machine import machine_info

    store = Store(tmp_path / "s.sqlite")
    run = store.create_run("pi", ["pi"], ["numpy"], [1000], {}, machine_info())
    samples = [1e-4 + 1e-7 * k for k in range(12)]
    owners = [0] * 4 + [2] * 4 + [3] * 4
    details = [
        {"process": 0, "status": "ok", "round": 0},
        {"process": 1, "status": "ok", "round": 1, "slow_spell": "busy", "replaced_by": 3},
        {"process": 2, "status": "ok", "round": 2},
        {"process": 3, "status": "ok", "round": "again"},
    ]
    store.save_cell(run, "pi", "numpy", 1000, {}, {"status": "ok", "samples_s": samples,
                    "sample_process": owners, "process_details": details, "first_call_s": 2e-4})  # fmt: skip
    store.close()
    path = export(jitlab_cli, tmp_path / "s.sqlite", run, tmp_path / "run.json")
    imported = jitlab_cli("import", str(path), "--store", str(tmp_path / "new.sqlite"))
    assert imported.returncode == 0, imported.stderr
    (cell,) = Store(tmp_path / "new.sqlite").cells(1)
    assert cell.samples_s == tuple(samples) and cell.sample_process == tuple(owners)
