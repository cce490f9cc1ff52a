"""A run whose cells were measured on two machines (as a cluster run is): every view groups by
machine, and comparisons pair cells of the same machine."""

from __future__ import annotations

import csv
import io
import json

import pytest

from jitlab.store import Store

MACHINES = {
    "gpu-box": {
        "hostname": "gpu-box",
        "name": "gpu-box",
        "cpu": "Fast CPU",
        "cores_logical": 16,
        "gpus": ["H100"],
    },
    "old-box": {"hostname": "old-box", "name": "old-box", "cpu": "Slow CPU", "cores_logical": 4, "gpus": []},
}


@pytest.fixture
def two_machine_runs(tmp_path):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    runs = []
    for scale in (1.0, 1.0):
        run_id = store.create_run(
            "pi", ["pi"], ["numpy"], [10**4, 10**6], {"threads": 1}, MACHINES["gpu-box"]
        )
        for name, machine in MACHINES.items():
            slow = 1.0 if name == "gpu-box" else 8.0
            for n in (10**4, 10**6):
                samples = [scale * slow * n * 1e-9 * (1 + k / 200) for k in range(20)]
                store.save_cell(run_id, "pi", "numpy", n, {}, {"status": "ok", "samples_s": samples}, machine)
        store.set_run_status(run_id, "finished")
        runs.append(run_id)
    return path, runs


def test_views_group_cells_by_machine(two_machine_runs, jitlab_cli, tmp_path):
    path, (first, second) = two_machine_runs
    shown = jitlab_cli("show", str(first), "--store", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "pi · on gpu-box" in shown.stdout and "pi · on old-box" in shown.stdout
    rows = list(csv.DictReader(io.StringIO(jitlab_cli("export", str(first), "--store", str(path)).stdout)))
    assert sorted(r["machine"] for r in rows) == ["gpu-box", "gpu-box", "old-box", "old-box"]
    report = jitlab_cli(
        "report", str(first), str(second), "-o", str(tmp_path / "report"), "--store", str(path)
    )
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "report" / "index.html").read_text()
    assert "pi · on gpu-box" in html and "pi · on old-box" in html and "measured on" in html
    plot = jitlab_cli("plot", str(first), "-o", str(tmp_path / "p.png"), "--store", str(path))
    assert plot.returncode == 0 and (tmp_path / "p.png").stat().st_size > 10_000


def test_compare_pairs_cells_of_the_same_machine(two_machine_runs, jitlab_cli):
    path, (first, second) = two_machine_runs
    result = jitlab_cli("compare", str(first), str(second), "--store", str(path), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["same_machine"] is True and sorted(data["machines_a"]) == ["gpu-box", "old-box"]
    # identical timings on each machine: no change anywhere (an 8x across machines would be "slower")
    assert sorted(c["machine"] for c in data["cells"]) == ["gpu-box", "gpu-box", "old-box", "old-box"]
    assert data["counts"]["same"] == 4
    across = jitlab_cli("compare", str(first), str(second), "--across-machines", "--store", str(path))
    assert across.returncode == 2 and "several machines" in across.stderr


def test_history_keeps_machines_apart(two_machine_runs, jitlab_cli):
    path, _ = two_machine_runs
    result = jitlab_cli("history", "pi", "--store", str(path), "--json")
    series = json.loads(result.stdout)["series"]
    assert sorted((s["machine"], s["size"]) for s in series) == [
        ("gpu-box", 10**4), ("gpu-box", 10**6), ("old-box", 10**4), ("old-box", 10**6)
    ]  # fmt: skip
    assert all(len(s["points"]) == 2 for s in series)


def test_a_baseline_of_another_machine_is_refused_before_measuring(two_machine_runs, jitlab_cli):
    path, runs = two_machine_runs
    args = ["run", "pi", "--backends", "python", "--sizes", "1e3", "--budget", "0.1", "--no-plot"]
    result = jitlab_cli(*args, "--baseline", str(runs[0]), "--store", str(path))
    assert result.returncode == 2 and "was measured on gpu-box, old-box" in result.stderr, result.stderr
    assert len(Store(path, create=False).runs()) == len(runs)  # nothing measured, nothing stored
