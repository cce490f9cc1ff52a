"""Verdicts that hold on a loaded machine: a change the load or the machine's own drift can explain
is `undecided` (exit 0), never slower; CPU time decides where it applies; counts have their own
floor. Cells are built from synthetic samples with the load and canary records workers write."""

from __future__ import annotations

import numpy as np
import pytest

from jitlab.compare.conditions import Conditions, judge
from jitlab.compare.runs import compare_records
from jitlab.engine.load import Load
from jitlab.stats.comparison import INSTRUCTION_FLOOR, compare_samples
from jitlab.store import CellRecord


def load(wait_share: float) -> dict:
    return {"seconds": 1.0, "wait_share": wait_share, "steal_share": 0.0, "cpu_share": 1 - wait_share,
            "loadavg": 4.0 if wait_share > 0.05 else 0.3, "cpus": 2}  # fmt: skip


def cell(median, wait_share=0.0, cpu_median=None, canary=0.034, seed=0, processes=3, per_process=20):
    rng = np.random.default_rng(seed)
    samples, cpu, index = [], [], []
    for k in range(processes):
        offset = rng.normal(0, 0.003)
        samples += list(median * np.exp(offset + rng.normal(0, 0.004, per_process)))
        cpu += list((cpu_median or median) * np.exp(offset + rng.normal(0, 0.004, per_process)))
        index += [k] * per_process
    details = tuple(
        {"process": k, "status": "ok", "load": load(wait_share), "canary": {"t": float(k), "python_s": canary,
         "numpy_s": 0.0015}}
        for k in range(processes)
    )  # fmt: skip
    return CellRecord(
        1, "w", "python", 1, {}, "ok", None, samples_s=tuple(samples), sample_process=tuple(index),
        cpu_samples_s=tuple(cpu) if cpu_median is not None else (), process_details=details,
    )  # fmt: skip


def test_a_quiet_baseline_against_a_loaded_run_of_the_same_code_is_undecided_not_slower():
    quiet = cell(8e-3)
    loaded = cell(8e-3 * 1.52, wait_share=0.4, seed=1)  # +52% of waiting, as the issue saw
    stats, _ = compare_records(quiet, loaded)
    assert stats.verdict == "undecided"
    assert "run B was measured on a busy machine" in stats.reason and "waited 40% of its time" in stats.reason
    assert "--measure instructions" in stats.reason


def test_cpu_time_decides_where_the_load_inflated_the_wall_time():
    quiet = cell(8e-3, cpu_median=8e-3)
    same_code = cell(8e-3 * 2.9, wait_share=0.65, cpu_median=8e-3 * 1.001, seed=2)
    stats, _ = compare_records(quiet, same_code)
    assert stats.verdict == "undecided" and "on CPU time: same" in stats.reason
    slower_code = cell(8e-3 * 3.1, wait_share=0.65, cpu_median=8e-3 * 1.10, seed=3)
    called, _ = compare_records(quiet, slower_code)
    assert called.verdict == "slower" and called.basis == "cpu time"
    assert called.ratio == pytest.approx(1.10, abs=0.01) and "on CPU time" in called.reason


def test_a_change_larger_than_the_load_can_explain_stands():
    quiet = cell(1e-3)
    loaded = cell(3e-3, wait_share=0.2, seed=4)  # waiting explains at most 1.25x, not 3x
    stats, _ = compare_records(quiet, loaded)
    assert stats.verdict == "slower" and "more than the load explains" in stats.reason
    # the load of A can explain B looking faster, not slower
    faster, _ = compare_records(cell(1.6e-3, wait_share=0.5, seed=5), cell(1e-3, seed=6))
    assert faster.verdict == "undecided"


def test_a_drift_of_the_machine_between_the_runs_makes_a_change_undecided():
    before = cell(1e-3, canary=0.034)
    drifted = cell(1.4e-3, canary=0.050, seed=7)  # the canary ran 47% slower during B
    stats, _ = compare_records(before, drifted)
    assert stats.verdict == "undecided" and "the machine itself ran 47.1% slower during run B" in stats.reason
    beyond = cell(2.5e-3, canary=0.050, seed=8)
    assert compare_records(before, beyond)[0].verdict == "slower"
    steady = cell(1.1e-3, canary=0.0345, seed=9)
    assert compare_records(before, steady)[0].verdict == "slower"
    # a shift within the spread of the canary's own readings on one side is its noise, not a drift
    noisy = cell(1.4e-3, canary=0.050, seed=10)
    readings = [0.030, 0.050, 0.060]
    details = tuple(
        {**d, "canary": {**d["canary"], "python_s": r}} for d, r in zip(noisy.process_details, readings)
    )
    noisy = CellRecord(**{**noisy.__dict__, "process_details": details})
    assert compare_records(before, noisy)[0].verdict == "slower"


def test_judge_leaves_uncalled_verdicts_and_unknown_conditions_alone():
    a, b = [1.0 + 0.001 * (i % 7) for i in range(40)], [1.02 + 0.001 * (i % 7) for i in range(40)]
    same = compare_samples(a, a)
    unknown = Conditions(None, None)
    busy = Conditions(Load(1.0, 0.5, 0.0, 0.5, 4.0, 2), None)
    assert judge(same, unknown, busy) is same
    called = compare_samples(a, [x * 1.5 for x in b], process_a=[i // 10 for i in range(40)],
                             process_b=[i // 10 for i in range(40)])  # fmt: skip
    assert called.verdict == "slower" and judge(called, unknown, unknown) is called


def test_instruction_counts_have_their_own_floor():
    counts = [8.7e6 + (i % 3) for i in range(10)]
    process = [i // 5 for i in range(10)]
    same = compare_samples(counts, counts, process_a=process, process_b=process)
    assert same.verdict == "same"

    def compared(factor):
        from jitlab.stats.comparison import compare_with_replicates

        return compare_with_replicates(counts, [c * factor for c in counts], process_a=process,
                                       process_b=process, basis="instructions")[0]  # fmt: skip

    assert compared(1.01).verdict == "slower" and compared(1.01).margin == INSTRUCTION_FLOOR
    assert compared(1.003).verdict == "same" and "instruction floor ±0.5%" in compared(1.003).reason
    assert compared(0.99).verdict == "faster"


def test_instruction_counts_of_one_process_each_call_a_change_their_counts_show():
    # the pytest plugin counts a test's calls in one process, 5 counts per side that often repeat
    # exactly: Mann-Whitney's p on 5 and 5 tied counts read 0.012 for a 5.0% change whose interval
    # was +5.0% to +5.0%, and the verdict was "same" (loaded_verdicts.py's pytest phase)
    from jitlab.stats.comparison import compare_with_replicates

    # the counts of that phase's two sessions (the first calls count a little more)
    quiet = [14004198.0, 14000845.0, 14000614.5, 14000514.0, 14000514.0]
    five_percent = [14705198.0, 14701845.0, 14701614.5, 14701514.0, 14701514.0]

    def compared(counts):
        return compare_with_replicates(quiet, counts, basis="instructions")[0]

    slower = compared(five_percent)
    assert slower.verdict == "slower" and slower.p_value < 1e-6, slower.reason
    assert compared([c * 1.01 for c in quiet]).verdict == "slower"
    assert compared([c * 0.95 for c in quiet]).verdict == "faster"
    # the same code, counts a few instructions apart: inside the instruction floor
    assert compared([c + 3 for c in quiet]).verdict == "same"
    assert compared(list(quiet)).verdict == "same"
    assert compared([c * 1.003 for c in quiet]).verdict == "same"


def mixed_cell(median, busy, processes=10, seed=0):
    """A cell whose processes in `busy` waited half their time for a CPU (and read 1.5x longer)."""
    rng = np.random.default_rng(seed)
    samples, index = [], []
    for k in range(processes):
        slow = 1.5 if k in busy else 1.0
        samples += list(median * slow * np.exp(rng.normal(0, 0.003) + rng.normal(0, 0.003, 12)))
        index += [k] * 12
    details = tuple(
        {"process": k, "status": "ok", "load": load(0.5 if k in busy else 0.0),
         "canary": {"t": float(k), "python_s": 0.034, "numpy_s": 0.0015}}
        for k in range(processes)
    )  # fmt: skip
    return CellRecord(
        1, "w", "python", 1, {}, "ok", None, samples_s=tuple(samples), sample_process=tuple(index),
        process_details=details,
    )  # fmt: skip


def test_the_processes_that_ran_quiet_decide_when_most_did():
    """One busy spell over a few of a cell's many processes: the others still decide, on wall time."""
    baseline = mixed_cell(8e-3, busy=set(), seed=10)
    slower = mixed_cell(8e-3 * 1.05, busy={2, 5, 7}, seed=11)
    stats, _ = compare_records(baseline, slower)
    assert stats.verdict == "slower" and stats.basis == "quiet processes", stats.reason
    assert stats.ratio == pytest.approx(1.05, abs=0.01)
    assert "on the processes that ran quiet (10 in A, 7 in B)" in stats.reason
    same_code = mixed_cell(8e-3, busy={1, 4, 8}, seed=12)
    same, _ = compare_records(baseline, same_code)
    assert same.verdict == "same" and same.basis == "quiet processes", same.reason
    mostly_busy = mixed_cell(8e-3, busy=set(range(7)), seed=13)  # 3 quiet of 10: too few to say
    assert compare_records(baseline, mostly_busy)[0].verdict == "undecided"
