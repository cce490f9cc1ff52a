"""The fusion workload: exact results on every backend (each in its own worker), the work counts
behind GB/s and GFLOP/s, and `jitlab run fusion` end to end with its rates table and k plot."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from jitlab.backends import get_backend
from jitlab.engine.runner import execute_cell
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.workloads.api import Case
from jitlab.workloads.fusion import K_VALUES, exact_chain, fusion, throughput

TINY = TimingPolicy(budget_s=0.2)


def test_numpy_chain_is_exact_in_process():
    built = fusion.build(get_backend("numpy"), 1000, {"k": 8})
    (x,) = built.args(0)
    out = built.fn(x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.astype(np.float64), exact_chain(Case(1000, 0, {"k": 8}), (x,)))


@pytest.mark.parametrize("backend", ["torch-compile", "jax", "tensorflow", "numba", "numba-parallel"])
def test_fused_backends_compute_the_exact_chain(backend):
    result = execute_cell(CellSpec("fusion", backend, 4096, {"k": 16}, policy=TINY), timeout_s=300)
    assert result.status == "ok", result.reason
    assert result.errors and max(result.errors) == 0.0


def test_work_counts():
    assert throughput(10**6, {"k": 16}, "torch") == {"bytes": 16 * 8e6, "flops": 16e6}
    assert throughput(10**6, {"k": 16}, "jax") == {"bytes": 8e6, "flops": 16e6}


def test_run_fusion_end_to_end(jitlab_cli, store, tmp_path):
    done = jitlab_cli(
        "run", "fusion", "--backends", "numpy", "--sizes", "1e4", "--budget", "0.2", "--store", str(store)
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "achieved rates" in done.stdout and "GB/s" in done.stdout and "GFLOP/s" in done.stdout
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT backend, params, status, errors FROM cells").fetchall()
    assert len(rows) == len(fusion.sweep["k"])  # the default k values (--full runs K_VALUES)
    assert {json.loads(p)["k"] for _, p, _, _ in rows} == set(fusion.sweep["k"]) < set(K_VALUES)
    for backend, params, status, errors in rows:
        assert status == "ok" and max(json.loads(errors)) == 0.0, (backend, params)
    assert (tmp_path / "run-1-fusion-k.png").is_file()
