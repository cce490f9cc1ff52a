"""Change-point detection on histories: exact segmentation, steps located at the right run, no steps
in flat or noisy series, one machine at a time, and the `jitlab history` command."""

import itertools
import json

import numpy as np
import pytest

from jitlab.cli import main
from jitlab.errors import UserError
from jitlab.history import load_history, pelt
from jitlab.history.changepoint import detect_steps
from jitlab.store import Store
from jitlab.store.machine import machine_info

MACHINE = machine_info()


def brute_force(y, penalty, min_size):
    n, best = len(y), None
    for k in range(0, 4):
        for cuts in itertools.combinations(range(min_size, n - min_size + 1), k):
            bounds = [0, *cuts, n]
            if any(bounds[i + 1] - bounds[i] < min_size for i in range(len(bounds) - 1)):
                continue
            cost = penalty * k + sum(
                float(((y[a:b] - y[a:b].mean()) ** 2).sum()) for a, b in zip(bounds, bounds[1:])
            )
            if best is None or cost < best[0] - 1e-12:
                best = (cost, list(cuts))
    return best[1]


def test_pelt_finds_the_optimal_segmentation():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(4, 11))
        y = rng.normal(0, 1, n) + np.repeat(rng.normal(0, 4, 3), [n // 3, n // 3, n - 2 * (n // 3)])
        penalty, min_size = float(rng.uniform(0.5, 8)), int(rng.integers(1, 3))
        found = pelt(y, penalty, min_size)
        if len(found) <= 3:
            assert found == brute_force(y, penalty, min_size)


@pytest.mark.parametrize("where, change", [(13, 0.10), (6, -0.08), (20, 0.05)])
def test_a_step_in_a_synthetic_series_is_located(where, change):
    rng = np.random.default_rng(where)
    medians = 1e-3 * np.exp(rng.normal(0, 0.01, 30))
    medians[where:] *= 1 + change
    assert detect_steps(medians) == [where]


def test_flat_and_noisy_series_rarely_have_steps():
    rng = np.random.default_rng(0)
    calls = sum(bool(detect_steps(1e-3 * np.exp(rng.normal(0, 0.05, 25)))) for _ in range(100))
    assert calls <= 5  # about 1% expected
    assert detect_steps([1e-3] * 10) == []


def test_a_single_outlier_run_is_not_a_step():
    medians = [1e-3] * 8 + [1.5e-3] + [1e-3] * 8
    assert detect_steps(np.array(medians) * np.exp(np.random.default_rng(1).normal(0, 0.01, 17))) == []


def history_store(path, medians, machine=MACHINE, workload="pi", backend="numpy"):
    store = Store(path)
    rng = np.random.default_rng(0)
    run_ids = []
    for median in medians:
        run_id = store.create_run(workload, [workload], [backend], [10**6], {}, machine)
        result = {"status": "ok", "samples_s": list(rng.lognormal(np.log(median), 0.01, 20))}
        store.save_cell(run_id, workload, backend, 10**6, {}, result)
        store.save_cell(run_id, workload, "jax", 10**6, {}, {"status": "ok", "samples_s": [2e-3] * 20})
        store.set_run_status(run_id, "finished")
        run_ids.append(run_id)
    return store, run_ids


def test_history_locates_the_run_where_a_step_began(store):
    medians = 1e-3 * np.exp(np.random.default_rng(5).normal(0, 0.01, 24))
    medians[15:] *= 1.12
    s, run_ids = history_store(store, medians)
    history = load_history(s, "pi", backend="numpy")
    (series,) = history.series
    assert [p.run_id for p in series.points] == run_ids
    (step,) = series.steps
    assert step.run_id == run_ids[15]
    assert step.change == pytest.approx(0.12, abs=0.02)
    jax = load_history(s, "pi", backend="jax").series[0]
    assert jax.steps == ()


def test_history_has_series_per_machine(store):
    s, first = history_store(store, [1e-3] * 5)
    other = {**MACHINE, "hostname": "elsewhere", "name": "elsewhere"}
    later = []
    for median in [5e-3] * 5:
        run_id = s.create_run("pi", ["pi"], ["numpy"], [10**6], {}, other)
        s.save_cell(run_id, "pi", "numpy", 10**6, {}, {"status": "ok", "samples_s": [median] * 10})
        later.append(run_id)
    history = load_history(s, "pi", backend="numpy")
    by_machine = {series.machine: series for series in history.series}
    assert len(by_machine) == 2 and "elsewhere" in by_machine
    assert [p.run_id for p in by_machine["elsewhere"].points] == later
    assert all(series.steps == () for series in history.series)  # the 5x is hardware, not a step
    only = load_history(s, "pi", backend="numpy", machine="elsewhere")
    assert len(only.series) == 1 and only.other_machine_runs == tuple(first)
    with pytest.raises(UserError, match="measured on 'nowhere'"):
        load_history(s, "pi", machine="nowhere")


def test_unknown_workload_is_a_user_error(store):
    s, _ = history_store(store, [1e-3] * 3)
    with pytest.raises(UserError, match="no successful stored cells of workload 'nope'"):
        load_history(s, "nope")


def test_cli_history_table_json_and_plot(store, tmp_path, capsys):
    medians = 1e-3 * np.exp(np.random.default_rng(2).normal(0, 0.01, 12))
    medians[7:] *= 0.8
    _, run_ids = history_store(store, medians)
    plot = tmp_path / "history.png"
    assert (
        main(
            [
                "history",
                "pi",
                "--backend",
                "numpy",
                "--size",
                "1e6",
                "--store",
                str(store),
                "--plot",
                str(plot),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"{run_ids[7]} " in out and "step -20.0% begins" in out
    header = next(line for line in out.splitlines() if "median" in line and "95% CI" in line)
    assert header.rstrip(" ┃│").endswith("change")  # every column has a header
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"
    assert main(["history", "pi", "--store", str(store)]) == 0
    assert f"run {run_ids[7]}:" in capsys.readouterr().out
    assert main(["history", "pi", "--store", str(store), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    steps = {(s["backend"], s["size"]): [t["run_id"] for t in s["steps"]] for s in data["series"]}
    assert steps == {("jax", 10**6): [], ("numpy", 10**6): [run_ids[7]]}
    assert main(["history", "nope", "--store", str(store)]) == 2
    assert (
        main(["history", "pi", "--store", str(store), "--plot", str(tmp_path / "no" / "dir" / "x.png")]) == 2
    )
