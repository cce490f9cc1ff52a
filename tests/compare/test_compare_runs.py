"""`jitlab compare` and the regression gate on stores of synthetic cells and on real runs of pi."""

import json

import numpy as np
import pytest

from jitlab.cli import main
from jitlab.compare import check_regressions, compare_runs
from jitlab.errors import UserError
from jitlab.store import Store
from jitlab.store.machine import machine_info

MACHINE = machine_info()


def samples(median, n=40, spread=0.03, seed=0):
    return list(np.random.default_rng(seed).lognormal(np.log(median), spread, n))


def synthetic_run(store, factors, machine=MACHINE, seed=0, workload="pi"):
    """A run of `workload` on numpy and jax at three sizes; numpy's times scaled by factors['numpy']."""
    run_id = store.create_run(workload, [workload], ["numpy", "jax"], [10**4, 10**5, 10**6], {}, machine)
    for k, backend in enumerate(("numpy", "jax")):
        for j, n in enumerate((10**4, 10**5, 10**6)):
            median = 1e-8 * n * factors.get(backend, 1.0)
            result = {
                "status": "ok",
                "samples_s": samples(median, seed=seed * 100 + k * 10 + j),
                "first_call_s": 0.5,
            }
            store.save_cell(run_id, workload, backend, n, {}, result)
    store.save_cell(
        run_id, workload, "torch", 10**4, {}, {"status": "failed", "reason": "RuntimeError: boom"}
    )
    store.set_run_status(run_id, "finished")
    return run_id


@pytest.fixture
def synthetic(store):
    s = Store(store)
    base = synthetic_run(s, {}, seed=1)
    slower = synthetic_run(s, {"numpy": 1.10}, seed=2)
    return s, base, slower


def test_a_ten_percent_slower_backend_is_found_and_the_other_is_not(synthetic):
    s, base, slower = synthetic
    comparison = compare_runs(s, base, slower)
    verdicts = {(c.backend, c.size): c.verdict for c in comparison.cells}
    assert all(verdicts[("numpy", n)] == "slower" for n in (10**4, 10**5, 10**6))
    assert all(verdicts[("jax", n)] in ("same",) for n in (10**4, 10**5, 10**6))
    assert verdicts[("torch", 10**4)].startswith("not comparable")
    assert comparison.geomeans["numpy"].ratio == pytest.approx(1.10, rel=0.02)
    assert comparison.geomeans["numpy"].ci_low > 1.05
    assert comparison.geomeans["jax"].ci_low < 1.0 < comparison.geomeans["jax"].ci_high
    assert comparison.same_machine
    assert comparison.counts()["slower"] == 3


def test_a_run_compared_with_itself_has_no_changes(synthetic):
    s, base, _ = synthetic
    comparison = compare_runs(s, base, base)
    assert {c.verdict for c in comparison.cells if c.stats} == {"same"}
    assert all(c.stats.ratio == 1.0 for c in comparison.cells if c.stats)


def test_threshold_hides_small_changes(synthetic):
    s, base, slower = synthetic
    shown = compare_runs(s, base, slower, threshold_pct=5).shown
    assert {c.backend for c in shown} == {"numpy", "torch"}  # the failed cell stays visible


def test_other_machines_are_refused_unless_asked_and_then_flagged(store):
    s = Store(store)
    other = {**MACHINE, "hostname": "elsewhere", "cpu": "Another CPU"}
    a, b = synthetic_run(s, {}), synthetic_run(s, {}, machine=other, seed=3)
    with pytest.raises(UserError, match="different machines.*--across-machines"):
        compare_runs(s, a, b)
    comparison = compare_runs(s, a, b, across_machines=True)
    assert not comparison.same_machine
    assert comparison.to_json()["same_machine"] is False
    assert comparison.to_json()["across_machines"] is True
    assert all(" → " in c.machine for c in comparison.cells)
    assert main(["compare", str(a), str(b), "--store", str(store)]) == 2
    assert main(["compare", str(a), str(b), "--store", str(store), "--across-machines"]) == 0


def test_no_common_cells_and_unknown_runs_are_user_errors(store):
    s = Store(store)
    a = synthetic_run(s, {}, workload="pi")
    b = synthetic_run(s, {}, workload="other")
    with pytest.raises(UserError, match="no cells in common"):
        compare_runs(s, a, b)
    with pytest.raises(UserError, match="no run 99"):
        compare_runs(s, a, 99)


def test_cli_json_and_table(synthetic, store, capsys):
    _, base, slower = synthetic
    assert main(["compare", str(base), str(slower), "--store", str(store), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["counts"]["slower"] == 3 and data["same_machine"] is True
    numpy_cells = [c for c in data["cells"] if c["backend"] == "numpy"]
    assert all(c["verdict"] == "slower" and c["ratio_ci95"][0] > 1 for c in numpy_cells)
    assert main(["compare", str(base), str(slower), "--store", str(store), "--threshold", "5"]) == 0
    out = capsys.readouterr().out
    assert "slower" in out and "geometric mean" in out and "6 cells changed by less than" not in out
    assert "3 cells changed by less than 5%: hidden" in out


def test_cli_bad_input_exits_2(synthetic, store, capsys):
    _, base, _ = synthetic
    assert main(["compare", str(base), "42", "--store", str(store)]) == 2
    assert "no run 42" in capsys.readouterr().err
    assert main(["compare", str(base), str(base), "--store", str(store), "--threshold", "-1"]) == 2
    assert main(["compare", "1", "2", "--store", str(store) + ".missing"]) == 2


def test_gate_lists_cells_slower_than_the_limit(synthetic):
    s, base, slower = synthetic
    regressions = check_regressions(s, base, slower, fail_above_pct=5)
    assert sorted((c.backend, c.size) for c in regressions) == [
        ("numpy", 10**4),
        ("numpy", 10**5),
        ("numpy", 10**6),
    ]
    assert check_regressions(s, base, slower, fail_above_pct=25) == []
    assert check_regressions(s, slower, base, fail_above_pct=0) == []  # faster is never a regression


def test_real_runs_gate_and_compare(store, capsys):
    """Two real runs of pi: a gate against an impossibly fast baseline fails with exit 1 naming the cells;
    a gate against the previous real run with a wide limit passes; compare works on real samples."""
    s = Store(store)
    fast = s.create_run("pi", ["pi"], ["numpy", "python"], [10**4], {}, MACHINE)
    for backend in ("numpy", "python"):
        s.save_cell(fast, "pi", backend, 10**4, {}, {"status": "ok", "samples_s": samples(1e-9, seed=5)})
    s.close()
    common = [
        "run",
        "pi",
        "--backends",
        "numpy,python",
        "--sizes",
        "1e4",
        "--budget",
        "1",
        "--store",
        str(store),
        "--no-plot",
        "--threads",
        "1",
    ]
    assert main([*common, "--baseline", str(fast), "--fail-above", "10"]) == 1
    err = capsys.readouterr().err
    assert "2 cells significantly slower than in run 1 by more than 10%" in err
    assert "pi · numpy · n=10000" in err and "pi · python · n=10000" in err

    assert main([*common, "--baseline", "2", "--fail-above", "1000"]) == 0
    assert "no cell is significantly slower than in run 2" in capsys.readouterr().err

    assert main(["compare", "2", "3", "--store", str(store), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["backend"] for c in data["cells"]} == {"numpy", "python"}
    assert all(c["samples"][0] >= 1 and c["ratio"] > 0 for c in data["cells"])
    assert data["same_machine"] is True

    assert main([*common, "--baseline", "77"]) == 2
    assert "no run 77" in capsys.readouterr().err
    assert len(Store(store).runs()) == 3  # a bad baseline is refused before anything is measured
    assert main([*common, "--fail-above", "5"]) == 2
    assert "--fail-above needs --baseline" in capsys.readouterr().err
