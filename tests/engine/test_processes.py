"""Cells measured in several real worker processes: each sample's process is recorded, the budget is
shared, and processes that disagree (a first call failing in one of them, results that differ beyond
the workload's stated error) make the cell `inconsistent` instead of being pooled."""

import json
import re
import sqlite3
from dataclasses import replace

import pytest
from jitlab_testing import DATA

from jitlab.engine.processes import merge_process_results
from jitlab.engine.runner import execute_cell
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.process_result import ProcessResult
from jitlab.store import Store

WORKLOADS = str(DATA / "process_workload.py")


def spec(workload, processes=3, budget=1.0):
    return CellSpec(
        workload=workload,
        backend="python",
        size=1,
        source_file=WORKLOADS,
        threads=1,
        policy=TimingPolicy(budget_s=budget, processes=processes, startup_in_budget=False),
    )


def test_samples_come_from_three_processes_each_recorded():
    result = execute_cell(spec("steady"), timeout_s=120)
    assert result.status == "ok", result.reason
    index = result.sample_process
    assert len(index) == len(result.samples_s)
    assert sorted(set(index)) == [0, 1, 2]
    assert list(index) == sorted(index)  # process 0's samples first, then 1's, then 2's
    details = result.process_details
    assert [d["process"] for d in details] == [0, 1, 2]
    assert all(d["status"] == "ok" and d["samples"] >= 1 for d in details)
    assert all(d["first_call_s"] > 0 for d in details)
    assert all(d["harness_overhead_s"] is not None and d["harness_overhead_s"] >= 0 for d in details)
    assert all(d["value"] == 1.0 for d in details)
    # only process 0 measures every seed
    assert len(result.values) == 5
    # the median of a 200 µs busy-wait, whatever the machine's load does to the rest
    assert sorted(result.samples_s)[len(index) // 2] >= 190e-6


def test_every_process_times_its_blocks_the_same_way():
    """Each process builds its own block timer (CUDA events on a CUDA device, the host clock here),
    and a note every process gives is said once."""
    steady = spec("steady")
    flushed = replace(steady, policy=replace(steady.policy, flush_l2=True))
    result = execute_cell(flushed, timeout_s=120)
    assert result.status == "ok", result.reason
    assert [d["timing_method"] for d in result.process_details] == ["host clock"] * 3
    assert result.timing_method == "host clock"
    notes = [w for w in result.warnings if "L2 flush requested" in w]
    assert notes == ["L2 flush requested but not a CUDA device: ignored"]


@pytest.mark.gpu
def test_every_process_of_a_cuda_cell_is_timed_with_cuda_events():
    gpu = CellSpec(
        "pi",
        "torch",
        10**6,
        threads=1,
        policy=TimingPolicy(budget_s=1.0, processes=3, startup_in_budget=False),
    )
    result = execute_cell(gpu, timeout_s=300)
    assert result.status == "ok", result.reason
    assert len(result.process_details) == 3
    assert [d["timing_method"] for d in result.process_details] == ["cuda events"] * 3
    assert result.timing_method == "cuda events"


def test_processes_1_keeps_one_process():
    result = execute_cell(spec("steady", processes=1), timeout_s=120)
    assert result.status == "ok"
    assert set(result.sample_process) == {0}
    assert len(result.process_details) == 1


def test_a_first_call_failing_in_one_process_makes_the_cell_inconsistent(store):
    result = execute_cell(spec("first_call_fails"), timeout_s=120)
    assert result.status == "inconsistent"
    assert "process 1 of 3 failed: RuntimeError: only process 1 fails" in result.reason
    assert "not pooled" in result.reason
    statuses = [d["status"] for d in result.process_details]
    assert statuses == ["ok", "failed", "ok"]
    assert set(result.sample_process) == {0, 2}  # the samples are kept, not pooled silently
    assert "only process 1 fails" in result.log
    # stored as such, and not comparable like a failed cell
    s = Store(store)
    run = s.create_run("t", ["first_call_fails"], ["python"], [1], {}, {})
    record = s.save_cell(run, "first_call_fails", "python", 1, {}, result)
    assert not record.ok and record.status == "inconsistent"
    again = s.cells(run)[0]
    assert again.sample_process == record.sample_process
    assert [d["status"] for d in again.process_details] == statuses


def test_results_differing_between_processes_make_the_cell_inconsistent():
    result = execute_cell(spec("result_differs"), timeout_s=120)
    assert result.status == "inconsistent"
    assert "process 1 gave 1.5 for seed 0 where process 0 gave 1" in result.reason
    assert "process 2 gave 2 for seed 0" in result.reason


def test_results_within_the_stated_error_are_pooled():
    result = execute_cell(spec("within_error"), timeout_s=120)
    assert result.status == "ok", result.reason
    assert sorted(set(result.sample_process)) == [0, 1, 2]


def test_a_failing_first_process_is_the_cells_failure_and_starts_no_other():
    failing = CellSpec(
        workload="faulty",
        backend="numpy",
        size=10,
        source_file=str(DATA / "faulty_workload.py"),
        policy=TimingPolicy(budget_s=1.0, processes=3),
    )
    result = execute_cell(failing, timeout_s=120)
    assert result.status == "failed"
    assert "deliberate failure" in result.reason
    assert [d["process"] for d in result.process_details] == [0]


def test_merge_keeps_process_0s_errors_and_the_largest_memory():
    ok = ProcessResult(status="ok", samples_s=(1.0, 1.1), values=(2.0, 2.5, 3.0), errors=(0.1, 0.2, 0.3))
    later = ProcessResult(status="ok", samples_s=(1.2,), values=(2.0,), errors=(0.1,), peak_rss_bytes=9)
    merged = merge_process_results([replace(ok, peak_rss_bytes=5), later])
    assert merged.status == "ok"
    assert merged.samples_s == (1.0, 1.1, 1.2) and merged.sample_process == (0, 0, 1)
    assert merged.errors == (0.1, 0.2, 0.3) and merged.peak_rss_bytes == 9
    nan = merge_process_results([ok, replace(later, values=(float("nan"),))])
    assert nan.status == "inconsistent"


def test_slow_calls_get_fewer_processes():
    """A block that does not fit five times into a process's share of the budget: one process."""
    from jitlab.engine.timing import planned_processes

    policy = TimingPolicy(budget_s=5.0, processes=3)
    assert planned_processes(policy, 0.01) == 3
    assert planned_processes(policy, 0.4) == 2
    assert planned_processes(policy, 2.0) == 1
    assert planned_processes(TimingPolicy(budget_s=5.0), 0.01) == 1


def test_the_budget_pays_for_starting_extra_processes():
    """A framework that takes 0.3 s to import gets three processes from 5 s; one taking 2.45 s, two
    (three would leave too little to sample); one taking 5.5 s, one. Each process then samples what
    is left, shared equally."""
    from jitlab.engine.timing import planned_processes, process_share

    policy = TimingPolicy(budget_s=5.0, processes=3)
    assert planned_processes(policy, 0.01, startup_s=0.3) == 3
    assert process_share(policy, 3, 0.01, 0.3) == pytest.approx((5.0 - 2 * 0.31) / 3)
    assert planned_processes(policy, 0.01, startup_s=2.45) == 2
    assert planned_processes(policy, 0.01, startup_s=5.5) == 1
    sampling_only = TimingPolicy(budget_s=5.0, processes=3, startup_in_budget=False)
    assert planned_processes(sampling_only, 0.01, startup_s=6.0) == 3


def test_cli_run_records_processes_and_noise_floor(jitlab_cli, store):
    result = jitlab_cli(
        "run", WORKLOADS, "--backends", "python", "--budget", "4", "--target-ci", "50", "--store", str(store), "--json",
        "--no-plot", "--processes", "2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    cells = {c["workload"]: c for c in json.loads(result.stdout)["cells"]}
    assert cells["steady"]["status"] == "ok"
    assert cells["steady"]["processes"] == 2
    assert cells["steady"]["noise_floor"] is not None
    assert cells["first_call_fails"]["status"] == "inconsistent"
    assert cells["result_differs"]["status"] == "inconsistent"
    with sqlite3.connect(store) as conn:
        stored = dict(conn.execute("SELECT workload, processes FROM cells").fetchall())
    steady = json.loads(stored["steady"])
    # a process measured in a slow spell (a busy machine) is measured again: the new one's samples
    # replace its own, under the new one's index (`replaced_by`)
    replaced = {
        k: w["replaced_by"] for k, w in enumerate(steady["workers"]) if w.get("replaced_by") is not None
    }
    assert set(steady["sample_process"]) == {replaced.get(k, k) for k in (0, 1)}, steady["workers"]
    shown = jitlab_cli("show", "1", "--store", str(store))
    # "of 3" when a slow spell's process was measured again after the rounds (a busy machine)
    assert re.search(r"python inconsistent at n=1: process 1 of [23] failed", shown.stdout), shown.stdout


@pytest.mark.parametrize("bad", ["0", "-2"])
def test_cli_rejects_bad_process_counts(jitlab_cli, store, bad):
    result = jitlab_cli("run", WORKLOADS, "--processes", bad, "--store", str(store))
    assert result.returncode == 2
    assert "--processes" in result.stderr


def test_the_budget_pays_for_each_extra_process_first_call():
    """A 1.5 s first call in every process: a 1.5 s budget that pays for start-ups does not pay for a
    second process (it would cost its start-up and a first call again); 6 s pays for three."""
    tight = spec("slow_first_call", budget=1.5)
    tight = replace(tight, policy=replace(tight.policy, startup_in_budget=True))
    result = execute_cell(tight, timeout_s=120)
    assert result.status == "ok", result.reason
    assert set(result.sample_process) == {0}
    assert any("1 of 3 processes" in w for w in result.warnings), result.warnings

    roomy = replace(tight, policy=replace(tight.policy, budget_s=6.0))
    result = execute_cell(roomy, timeout_s=120)
    assert result.status == "ok", result.reason
    assert sorted(set(result.sample_process)) == [0, 1, 2]
