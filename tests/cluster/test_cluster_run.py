"""`jitlab run --cluster` on a real local Ray cluster of two one-CPU nodes (node-a, node-b): every node
measures every cell, cells spread over nodes, a backend missing on one node, a node lost mid-run and
`--resume` measuring only its cells again."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from jitlab_testing import DATA

from jitlab.store import Store
from jitlab.store.identity import machine_label

WORKLOAD = str(DATA / "cluster_workload.py")
pytestmark = pytest.mark.timeout(600)


def by_machine(cells):
    return {(machine_label(c.machine), c.backend, c.size): c for c in cells}


def test_every_node_measures_every_cell(ray_cluster, jitlab_cli, tmp_path):
    store = tmp_path / "s.sqlite"
    result = jitlab_cli(
        "run",
        WORKLOAD,
        "--cluster",
        ray_cluster.address,
        "--budget",
        "0.1",
        "--store",
        str(store),
        "--no-plot",
    )
    assert result.returncode == 0, result.stderr
    assert "sleepy · on node-a" in result.stdout and "sleepy · on node-b" in result.stdout
    s = Store(store, create=False)
    cells = by_machine(s.cells(1))
    assert set(cells) == {
        (node, backend, size)
        for node in ("node-a", "node-b")
        for backend in ("python", "node-only")
        for size in (1, 2)
    }
    for size in (1, 2):
        for node in ("node-a", "node-b"):
            cell = cells[(node, "python", size)]
            assert cell.ok and cell.samples_s and cell.threads == 1  # one CPU per node: one thread
            assert cell.machine["name"] == node and cell.machine["node"]["labels"]["machine"] == node
        # the backend exists on node-a only: node-b records it as unavailable and the run goes on
        assert cells[("node-a", "node-only", size)].ok
        missing = cells[("node-b", "node-only", size)]
        assert missing.status == "unavailable" and "not installed" in missing.reason
    run = s.run(1)
    assert {m["name"] for m in run.options["cluster"]["machines"]} == {"node-a", "node-b"}
    shown = jitlab_cli("show", run.uuid[:8], "--store", str(store), "--json")
    assert len(json.loads(shown.stdout)["cells"]) == 8


def test_spread_measures_each_cell_once_on_some_node(ray_cluster, jitlab_cli, tmp_path):
    store = tmp_path / "s.sqlite"
    result = jitlab_cli(
        "run", WORKLOAD, "--backends", "python", "--sizes", "1,2,3,4", "--cluster", ray_cluster.address,
        "--spread", "--budget", "0.1", "--store", str(store), "--no-plot",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    cells = Store(store, create=False).cells(1)
    assert sorted(c.size for c in cells) == [1, 2, 3, 4] and all(c.ok for c in cells)
    assert {machine_label(c.machine) for c in cells} == {"node-a", "node-b"}  # both took cells


def test_nodes_selects_machines_and_unknown_ones_are_refused(ray_cluster, jitlab_cli, tmp_path):
    store = tmp_path / "s.sqlite"
    args = ["run", WORKLOAD, "--backends", "python", "--sizes", "1", "--budget", "0.1", "--no-plot"]
    result = jitlab_cli(
        *args, "--cluster", ray_cluster.address, "--nodes", "machine=node-b", "--store", str(store)
    )
    assert result.returncode == 0, result.stderr
    assert {machine_label(c.machine) for c in Store(store, create=False).cells(1)} == {"node-b"}
    other = tmp_path / "other.sqlite"
    refused = jitlab_cli(*args, "--cluster", ray_cluster.address, "--nodes", "node-z", "--store", str(other))
    assert refused.returncode == 2 and "'node-z' matches no node" in refused.stderr
    assert not other.exists()


@pytest.mark.slow
def test_capture_runs_every_case_on_every_node(ray_cluster, jitlab_cli):
    corpus = str(DATA.parent.parent / "corpus" / "basics.py")
    args = ["capture", corpus, "--methods", "fx,jitlab", "--cases", "add_mul_fn,reductions_fn", "--json"]
    result = jitlab_cli(*args, "--cluster", ray_cluster.address)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"] == "jitlab.capture/1" and set(data["machines"]) == {"node-a", "node-b"}
    machines = data["by_machine"]  # one report per machine, keyed like the envelope's machines
    assert set(machines) == {"node-a", "node-b"}
    for report in machines.values():
        assert [case["name"] for case in report["cases"]] == ["add_mul_fn", "reductions_fn"]
        assert report["totals"]["fx"]["captured"] == 2 and report["totals"]["jitlab"]["captured"] == 2
    spread = jitlab_cli(*args, "--cluster", ray_cluster.address, "--spread")
    assert spread.returncode == 0 and json.loads(spread.stdout)["totals"]["fx"]["cases"] == 2


def _node_cells(store, node):
    if not store.exists():
        return []
    try:
        return [c for c in Store(store, create=False).cells(1) if machine_label(c.machine) == node]
    except Exception:  # the run has not been created yet
        return []


def test_a_lost_node_fails_its_cells_and_resume_measures_them_again(ray_cluster, tmp_path):
    """Runs last in this module: it kills node-b (and brings a new node-b back)."""
    store = tmp_path / "s.sqlite"
    command = [
        sys.executable, "-m", "jitlab", "run", WORKLOAD, "--backends", "python", "--sizes", "1,2,3,4",
        "--cluster", ray_cluster.address, "--budget", "0.1", "--store", str(store), "--no-plot",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while not _node_cells(store, "node-b"):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "node-b measured nothing in time"
        time.sleep(0.2)
    ray_cluster.kill("node-b")  # while node-b measures its next cell
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err  # the run goes on without the node

    s = Store(store, create=False)
    cells = by_machine(s.cells(1))
    assert all(cells[("node-a", "python", n)].ok for n in (1, 2, 3, 4))
    lost = [cells[("node-b", "python", n)] for n in (1, 2, 3, 4) if not cells[("node-b", "python", n)].ok]
    assert lost, "node-b finished every cell before it was killed"
    for cell in lost:
        assert cell.status == "failed" and "node node-b" in cell.reason and "lost" in cell.reason
    before = {key: c.finished_at for key, c in cells.items() if c.ok}

    ray_cluster.add("node-b")  # the machine comes back
    resumed = subprocess.run(
        [sys.executable, "-m", "jitlab", "run", WORKLOAD, "--resume", "1", "--cluster", ray_cluster.address,
         "--store", str(store), "--no-plot"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    after = by_machine(s.cells(1))
    assert len(after) == 8 and all(c.ok for c in after.values())
    # only the lost cells were measured again
    assert {key: c.finished_at for key, c in after.items() if key in before} == before


@pytest.mark.slow
def test_capture_speed_device_is_checked_by_each_node(ray_cluster, jitlab_cli):
    """The head need not have a GPU: with `--cluster`, `--device cuda` is checked by each node's
    worker, and each machine's report names the device it ran on. No node here has a GPU, so every
    case fails on every node with what torch sees there, and the command exits 1."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU, so the nodes can use it")
    corpus = str(DATA.parent.parent / "corpus" / "basics.py")
    args = ["capture", corpus, "--speed", "--cases", "add_mul_fn", "--backend", "eager", "--budget", "0.05"]
    on_gpu = jitlab_cli(*args, "--device", "cuda", "--json", "--cluster", ray_cluster.address)
    assert on_gpu.returncode == 1, on_gpu.stderr
    assert "--device cuda:0: not usable on node-a, node-b" in on_gpu.stderr
    reports = json.loads(on_gpu.stdout)["by_machine"]
    assert set(reports) == {"node-a", "node-b"}
    for report in reports.values():
        assert report["device"] == "cuda:0"
        (case,) = report["cases"]
        for result in case["results"].values():
            assert "sees no CUDA GPU" in result["error"] and result["error"].endswith("(on this node)")
    on_cpu = jitlab_cli(*args, "--device", "cpu", "--json", "--cluster", ray_cluster.address)
    assert on_cpu.returncode == 0, on_cpu.stderr
    for report in json.loads(on_cpu.stdout)["by_machine"].values():
        (case,) = report["cases"]
        assert report["device"] == "cpu" and case["results"]["jitlab"]["equal"] is True
