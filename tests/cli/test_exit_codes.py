"""Exit codes as CI reads them (docs/automation.md): 0 ok, 1 a requested check failed or a run
measured nothing, 2 bad input, 3 a bug in jitlab."""

from __future__ import annotations

import json

import numpy as np
import pytest
from jitlab_testing import DATA

from jitlab.cli import main
from jitlab.store import Store

MIXED = str(DATA / "mixed_workload.py")
FAST = ["--budget", "0.05", "--no-plot", "--threads", "1"]


def test_strict_fails_on_failed_timed_out_and_requested_unavailable_cells(jitlab_cli, store):
    result = jitlab_cli(
        "run",
        MIXED,
        "--backends",
        "python,numpy,numba,triton",
        "--timeout",
        "5",
        "--strict",
        "--json",
        "--store",
        str(store),
        *FAST,
        env={"MIXED_HANG_S": "60"},
    )
    assert result.returncode == 1, result.stderr
    statuses = {c["status"] for c in json.loads(result.stdout)["cells"]}
    assert statuses == {"ok", "failed", "timeout", "unavailable"}
    assert "--strict: 4 cell(s) failed or timed out" in result.stderr
    assert "4 cell(s) of requested backends unavailable (triton)" in result.stderr


def test_without_strict_failures_beside_measured_cells_exit_0(jitlab_cli, store):
    result = jitlab_cli(
        "run", MIXED, "--backends", "python,numba", "--sizes", "1000", "--store", str(store), *FAST
    )
    assert result.returncode == 0, result.stderr
    assert "failed" in result.stdout


def test_a_run_that_measured_nothing_exits_1_without_strict(jitlab_cli, store):
    result = jitlab_cli("run", MIXED, "--backends", "numba", "--sizes", "1000", "--store", str(store), *FAST)
    assert result.returncode == 1
    assert "no cell was measured (2 failed)" in result.stderr
    assert len(Store(store).cells(1)) == 2  # stored all the same


def test_strict_ignores_unavailable_backends_it_was_not_asked_for(jitlab_cli, store):
    # the default backend list holds every backend the workload implements, installed or not
    result = jitlab_cli("run", str(DATA / "imaginary_backend.py"), "--strict", "--store", str(store), *FAST)
    assert result.returncode == 0, result.stderr
    named = jitlab_cli(
        "run",
        str(DATA / "imaginary_backend.py"),
        "--backends",
        "python,imaginary",
        "--strict",
        "--store",
        str(store),
        *FAST,
    )
    assert named.returncode == 1 and "unavailable (imaginary)" in named.stderr


def two_runs(path, slowdown: float) -> Store:
    store = Store(path)
    rng = np.random.default_rng(0)
    for factor in (1.0, slowdown):
        run_id = store.create_run("pi", ["pi"], ["numpy"], [1000], {}, {"cpu": "test CPU"})
        for backend in ("numpy", "python"):
            scale = factor if backend == "numpy" else 1.0
            samples = list(1e-3 * scale * rng.lognormal(0, 0.01, 30))
            store.save_cell(run_id, "pi", backend, 1000, {}, {"status": "ok", "samples_s": samples})
        store.set_run_status(run_id, "finished")
    return store


@pytest.mark.parametrize("pct, expected", [(5, 1), (30, 0)])
def test_compare_fail_above_gates_two_stored_runs(tmp_path, capsys, pct, expected):
    two_runs(tmp_path / "s.sqlite", slowdown=1.2)
    code = main(
        ["compare", "1", "2", "--fail-above", str(pct), "--store", str(tmp_path / "s.sqlite"), "--json"]
    )
    captured = capsys.readouterr()
    assert code == expected
    gate = json.loads(captured.out)["gate"]
    assert gate["passed"] is (expected == 0) and gate["fail_above_pct"] == pct
    if expected:
        assert len(gate["regressions"]) == 1 and gate["regressions"][0].startswith(
            "pi · numpy · n=1000: +20."
        )
        assert "1 cell(s) significantly slower than in run 1 by more than 5%" in captured.err


def test_compare_without_fail_above_exits_0_on_a_regression_and_rejects_a_negative_limit(tmp_path, capsys):
    two_runs(tmp_path / "s.sqlite", slowdown=1.5)
    assert main(["compare", "1", "2", "--store", str(tmp_path / "s.sqlite")]) == 0
    assert main(["compare", "1", "2", "--fail-above", "-1", "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "--fail-above -1 is negative" in capsys.readouterr().err


def test_a_bug_in_jitlab_exits_3_with_its_traceback(tmp_path, capsys, monkeypatch):
    two_runs(tmp_path / "s.sqlite", slowdown=1.0)

    def broken(*args, **kwargs):
        raise RuntimeError("a deliberate bug")

    monkeypatch.setattr("jitlab.cli.compare_cmd.compare_runs", broken)
    assert main(["compare", "1", "2", "--store", str(tmp_path / "s.sqlite")]) == 3
    err = capsys.readouterr().err
    assert "RuntimeError: a deliberate bug" in err and "internal error" in err
