"""The overhead and async workloads end to end: exact sums on every backend, operations per second
in the report, and the async ratio table against waiting after every step."""

from __future__ import annotations

import json
import sqlite3

import numpy as np

from jitlab.backends import get_backend
from jitlab.workloads.api import Case
from jitlab.workloads.async_steps import async_steps, reference_steps


def _cells(store):
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT backend, params, status, vals, errors FROM cells").fetchall()


def test_run_overhead_end_to_end(jitlab_cli, store):
    backends = "python,numpy,numba,torch,jax,tensorflow"
    done = jitlab_cli(
        "run", "overhead", "--backends", backends, "--sizes", "100", "--budget", "0.2", "--store", str(store)
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "op/s" in done.stdout
    rows = _cells(store)
    assert sorted(r[0] for r in rows) == sorted(backends.split(","))
    for backend, _, status, values, errors in rows:
        assert status == "ok", backend
        assert json.loads(values)[0] == 100.0 and json.loads(errors) == [0.0], backend


def test_async_steps_match_the_float64_reference_in_process():
    built = async_steps.build(get_backend("torch"), 50, {"sync": "every-step"})
    out = built.fn(0).numpy()
    ref = reference_steps(Case(50, 0, {}), tuple(async_steps.inputs(Case(50, 0, {}))))
    np.testing.assert_allclose(out, ref, atol=1e-5)


def test_run_async_end_to_end(jitlab_cli, store):
    done = jitlab_cli(
        "run", "async", "--backends", "jax,torch", "--sizes", "200", "--budget", "0.2", "--store", str(store)
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "speed-up against the baseline" in done.stdout and "sync=once" in done.stdout
    rows = _cells(store)
    assert len(rows) == 4
    for backend, params, status, _, errors in rows:
        assert status == "ok", (backend, params)
        assert max(json.loads(errors)) < 1e-5, (backend, params)
