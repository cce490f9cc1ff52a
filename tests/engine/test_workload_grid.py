"""Default and full grids: which backends and cells a workload runs by default, `--full`, and the
budget a workload asks for."""

from __future__ import annotations

import json
import sqlite3

from jitlab.engine.plan import plan_cells
from jitlab.engine.spec import TimingPolicy
from jitlab.workloads.registry import builtin_workloads


def _cells(workload, backends=None):
    return [p.spec for p in plan_cells([workload], backends, None, 1, TimingPolicy())]


def test_the_sampler_compiles_only_the_static_variants():
    sampler = builtin_workloads()["sampler"]
    for grid, compiled_sizes in ((sampler, {10**3}), (sampler.full_grid(), set(sampler.full_sizes))):
        cells = _cells(grid, ["torch", "torch-compile"])
        compiled = {(c.params["variant"], c.size) for c in cells if c.backend == "torch-compile"}
        eager = {(c.params["variant"], c.size) for c in cells if c.backend == "torch"}
        assert compiled == {(v, n) for v in ("static", "batched-static") for n in compiled_sizes}
        variants = ("naive", "static", "batched-naive", "batched-static")
        assert eager == {(v, n) for v in variants for n in grid.sizes}


def test_full_grid_has_the_documents_sizes_and_every_backend():
    fusion = builtin_workloads()["fusion"]
    default = {c.backend for c in _cells(fusion)}
    assert default == {"numpy", "torch", "torch-compile", "jax"}
    compiled = {c.params["k"] for c in _cells(fusion) if c.backend == "torch-compile"}
    assert compiled == {1, 16}
    full = fusion.full_grid()
    assert {c.params["k"] for c in _cells(full) if c.backend == "torch-compile"} == set(full.sweep["k"])
    assert {c.backend for c in _cells(full)} == default | {"numba", "numba-parallel", "tensorflow"}
    assert full.sweep["k"] == [1, 2, 4, 8, 16, 32, 64, 128] and len(fusion.sweep["k"]) < 8
    assert full.throughput is fusion.throughput and full.plot_x == "k"  # attributes come along
    sampler = builtin_workloads()["sampler"].full_grid()
    assert tuple(sampler.sizes) == tuple(10**e for e in range(8))
    assert sampler.baseline is builtin_workloads()["sampler"].baseline


def test_run_full_and_budget_defaults(jitlab_cli, store):
    done = jitlab_cli(
        "run", "fusion", "--full", "--backends", "numpy", "--sizes", "1e3", "--store", str(store), "--json",
        "--no-plot",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cells = json.loads(done.stdout)["cells"]
    assert sorted(c["params"]["k"] for c in cells) == [1, 2, 4, 8, 16, 32, 64, 128]
    with sqlite3.connect(store) as conn:
        (options,) = conn.execute("SELECT options FROM runs").fetchone()
    assert json.loads(options)["policy"]["budget_s"] == 1.0  # fusion's own default budget
    assert json.loads(options)["full"] is True
    resumed = jitlab_cli("run", "fusion", "--resume", "1", "--full", "--store", str(store))
    assert resumed.returncode == 2 and "--full" in resumed.stderr
    # the stored run's budget is the one it keeps: another is refused, not silently ignored
    rebudgeted = jitlab_cli("run", "fusion", "--resume", "1", "--budget", "3", "--store", str(store))
    assert rebudgeted.returncode == 2 and "--budget" in rebudgeted.stderr
    resumed = jitlab_cli("run", "fusion", "--resume", "1", "--store", str(store), "--json", "--no-plot")
    assert resumed.returncode == 0, resumed.stderr  # nothing missing: the full grid is all there
    assert len(json.loads(resumed.stdout)["cells"]) == 8
