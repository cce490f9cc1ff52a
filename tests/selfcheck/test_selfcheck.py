"""`jitlab selfcheck`: the JSON shape and exit code of a real (tiny) run through the engine, and the
verdict logic on cells with known figures. Nothing here asserts that this machine passes: the tests
run on shared machines whose load decides that."""

import json

import numpy as np
import pytest

from jitlab.selfcheck import harness, machine_state
from jitlab.selfcheck.harness import SelfcheckConfig
from jitlab.store.cell_rows import cell_from_result

VERDICTS = {"pass", "warn", "fail", "unknown"}


def record(median, processes=3, per_process=20, between=0.002, within=0.005, seed=0, loops=10, overhead=2e-9):
    rng = np.random.default_rng(seed)
    offsets = rng.normal(0, between, processes)
    samples = np.concatenate([median * np.exp(o + rng.normal(0, within, per_process)) for o in offsets])
    result = {
        "status": "ok",
        "samples_s": list(samples),
        "sample_process": [int(i) for i in np.repeat(np.arange(processes), per_process)],
        "process_details": [
            {"process": k, "loops": loops, "harness_overhead_s": overhead} for k in range(processes)
        ],
    }
    return cell_from_result(1, "selfcheck-spin", "python", int(median * 1e9), {"repeat": seed}, result)


def test_cli_json_shape_and_exit_code(jitlab_cli, tmp_path):
    store = tmp_path / "selfcheck.sqlite"
    result = jitlab_cli(
        "selfcheck", "--json", "--repeats", "1", "--budget", "0.3", "--processes", "2", "--store", str(store),
        timeout=600,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    data = json.loads(result.stdout)
    assert data["verdict"] == ("pass" if result.returncode == 0 else "fail")
    names = [c["name"] for c in data["checks"]]
    assert names[:7] == [
        "known cost 1 µs",
        "known cost 100 µs",
        "known cost 10 ms",
        "identical runs",
        "5% slower build",
        "timer",
        "harness overhead",
    ]
    assert {"CPU frequency governor", "turbo boost", "load average", "other busy processes"} <= set(names)
    assert {"thermal throttling", "ASLR", "isolated CPUs"} <= set(names)
    for check in data["checks"]:
        assert check["verdict"] in VERDICTS
        assert check["kind"] in ("harness", "machine")
        assert check["summary"]
        if check["verdict"] in ("warn", "fail"):
            assert check["advice"], check
    by_name = {c["name"]: c for c in data["checks"]}
    assert by_name["identical runs"]["details"]["compared"] == 1
    assert by_name["5% slower build"]["details"]["compared"] == 1
    for cost in ("1 µs", "100 µs", "10 ms"):
        details = by_name[f"known cost {cost}"]["details"]
        assert details["processes"] in (1, 2) and details["median_s"] > 0
    assert by_name["harness overhead"]["details"]["overhead_per_call_s"] >= 0
    assert data["config"]["processes"] == 2
    # the cells went through the real engine into the store, with their processes
    from jitlab.store import Store

    cells = Store(store).cells(1)
    assert len(cells) == 3 + 2 + 1
    assert all(c.ok for c in cells) and max(c.processes for c in cells) == 2
    # the drift canary was read before every worker process of those cells
    drift = by_name["speed drift (canary)"]
    assert drift["kind"] == "machine" and drift["verdict"] in ("pass", "warn")
    # one reading per worker process, a slow spell's replacement (a busy machine) included
    assert (
        drift["details"]["readings"]
        == sum(len(c.process_details) for c in cells)
        >= sum(c.processes for c in cells)
    )


def _with_canary(python_times):
    details = [
        {"process": k, "canary": {"t": 100.0 + k, "python_s": t, "numpy_s": 0.002}}
        for k, t in enumerate(python_times)
    ]
    return cell_from_result(
        1, "w", "python", 1, {}, {"status": "ok", "samples_s": [1.0], "process_details": details}
    )


def _with_load(wait_shares):
    details = [
        {"process": k, "load": {"seconds": 1.0, "wait_share": w, "steal_share": 0.0, "cpu_share": 1 - w,
                                "loadavg": 4.1, "cpus": 2}}
        for k, w in enumerate(wait_shares)
    ]  # fmt: skip
    return cell_from_result(
        1, "w", "python", 1, {}, {"status": "ok", "samples_s": [1.0], "process_details": details}
    )


def test_load_check_names_the_load_and_what_can_still_be_trusted():
    quiet = harness.load_check([_with_load([0.001, 0.01, 0.0])])
    assert quiet.verdict == "pass" and "quiet" in quiet.summary
    busy = harness.load_check([_with_load([0.01, 0.35, 0.6])])
    assert busy.verdict == "warn" and "2 of 3 workers" in busy.summary
    assert "waited 60% of its time for a CPU, load 4.1 on 2 CPUs" in busy.summary
    assert "wall-time figures and comparisons are unreliable now" in busy.advice
    assert "instruction counts" in busy.advice and "not affected" in busy.advice
    assert harness.load_check([record(1e-3)]).verdict == "unknown"
    # the known-cost advice names the load the workers recorded
    one_us = SelfcheckConfig(known_costs_s=(1e-6,), tolerance=0.02)
    loaded = cell_from_result(
        1, "w", "python", 1000, {},
        {"status": "ok", "samples_s": [2.1e-6] * 30,
         "process_details": [{**d, "harness_overhead_s": 2e-9} for d in _with_load([0.5]).process_details]},
    )  # fmt: skip
    (check,) = harness.known_cost_checks([loaded], one_us)
    assert "the busiest worker waited 50% of its time for a CPU" in check.advice


def test_drift_check_warns_when_the_machine_changed_speed():
    steady = harness.drift_check([_with_canary([0.034, 0.0341, 0.034, 0.0342])])
    assert steady.verdict == "pass" and steady.details["readings"] == 4
    drifting = harness.drift_check([_with_canary([0.034, 0.057, 0.057, 0.034, 0.034, 0.057])])
    assert drifting.verdict == "warn" and drifting.details["drift"] == pytest.approx(0.057 / 0.034 - 1)
    assert "67" in drifting.summary and "per-round ratios" in drifting.advice
    assert harness.drift_check([record(1e-3)]).verdict == "unknown"  # no readings: cells of older jitlabs


def test_cli_rejects_bad_options(jitlab_cli):
    result = jitlab_cli("selfcheck", "--repeats", "0")
    assert result.returncode == 2 and "--repeats" in result.stderr


def test_known_costs_within_tolerance_pass_and_outside_fail():
    config = SelfcheckConfig(known_costs_s=(1e-6, 1e-4), tolerance=0.02)
    checks = harness.known_cost_checks([record(1.01e-6), record(1.05e-4, seed=1)], config)
    assert [c.verdict for c in checks] == ["pass", "fail"]
    assert checks[0].details["error"] == pytest.approx(0.01, abs=0.003)
    assert "outside ±2%" in checks[1].summary and checks[1].advice
    # a few per cent over 1 µs: calls that missed their grid point (a paused process), not a slow loop
    one_us = SelfcheckConfig(known_costs_s=(1e-6,), tolerance=0.02)
    (paused,) = harness.known_cost_checks([record(1.026e-6)], one_us)
    (slow,) = harness.known_cost_checks([record(2.1e-6, seed=2, overhead=9e-7)], one_us)
    assert paused.verdict == slow.verdict == "fail"
    assert "missed their grid point" in paused.advice and "cannot time calls" not in paused.advice
    assert "cannot time calls this short" in slow.advice
    # +110% with jitlab's own cost at 2 ns: the harness check passed, so the advice must not blame it
    (paused_most,) = harness.known_cost_checks([record(2.1e-6, seed=2)], one_us)
    assert "cannot time calls" not in paused_most.advice and "harness is not the cause" in paused_most.advice


def test_identical_runs_verdict_counts_calls():
    config = SelfcheckConfig(repeats=3)
    same = [record(2e-3, seed=s) for s in range(4)]
    check = harness.identical_runs_check(same, config)
    assert check.verdict == "pass" and check.details["called_different"] == 0
    drifting = [record(2e-3 * f, seed=s) for s, f in enumerate((1.0, 1.2, 1.0, 1.2))]
    check = harness.identical_runs_check(drifting, config)
    assert check.verdict == "fail" and check.details["called_different"] == 3
    assert all(c["reason"] for c in check.details["comparisons"])


def test_slower_build_must_be_called_every_time():
    config = SelfcheckConfig(repeats=2, slower_factor=1.05)
    base = [record(2e-3, seed=s) for s in range(3)]
    assert (
        harness.slower_build_check(base, [record(2.1e-3, seed=10 + s) for s in range(2)], config).verdict
        == "pass"
    )
    missed = harness.slower_build_check(base, [record(2.1e-3, seed=10), record(2e-3, seed=11)], config)
    assert missed.verdict == "fail" and missed.details["called_slower"] == 1


def test_overhead_is_judged_against_the_smallest_reported_time():
    config = SelfcheckConfig()
    assert harness.overhead_check([record(1e-6, overhead=5e-9)], config).verdict == "pass"
    slow = harness.overhead_check([record(1e-6, overhead=50e-9), record(1e-2, overhead=50e-9)], config)
    assert slow.verdict == "fail" and slow.details["share"] == pytest.approx(0.05, rel=0.05)


def test_a_failed_cell_fails_its_check():
    failed = cell_from_result(
        1, "selfcheck-grid", "python", 1000, {"repeat": 0}, {"status": "timeout", "reason": "x"}
    )
    check = harness.known_cost_checks([failed], SelfcheckConfig(known_costs_s=(1e-6,)))[0]
    assert check.verdict == "fail" and "timeout" in check.summary


def test_machine_state_items_always_give_a_verdict():
    checks = [
        machine_state.governor(),
        machine_state.turbo(),
        machine_state.load_average(2),
        machine_state.busy_processes(0.1),
        machine_state.thermal_throttling(machine_state.throttle_counts()),
        machine_state.steal_time(machine_state.cpu_times()),
        machine_state.aslr(),
        machine_state.isolated_cpus(),
    ]
    for check in checks:
        assert check.verdict in VERDICTS and check.kind == "machine" and check.summary
        assert check.verdict != "fail"  # machine state explains; it never fails the selfcheck
        if check.verdict == "warn":
            assert check.advice
