"""A pair of builds measured side by side counts its rounds by one rule while the run measures it
(`jitlab.engine.pairs`) and when `jitlab compare` reads the stored runs (`jitlab.compare.paired`):
`jitlab.stats.quiet_rounds.round_medians`. A round after a slow canary reading counts for both; one
whose process waited for a CPU, or was replaced by a process measured again after the rounds,
counts for neither."""

from __future__ import annotations

import json

import pytest
from jitlab_testing import spin_workload

from jitlab.cli import main
from jitlab.engine.load import Load
from jitlab.stats.comparison import paired_verdict, too_wide_for_same
from jitlab.stats.quiet_rounds import RoundProcess, round_medians
from jitlab.store import Store


def test_a_round_counts_unless_its_process_failed_ran_busy_was_replaced_or_belongs_to_no_round():
    samples = [2e-3, 1e-3, 3e-3]
    processes = [
        RoundProcess(0, samples, ok=True, busy=False),
        RoundProcess(1, samples, ok=True, busy=True),  # waited for a CPU
        RoundProcess(2, samples, ok=False, busy=False),  # failed
        RoundProcess("again", samples, ok=True, busy=False),  # measured again after the rounds
        RoundProcess(4, [], ok=True, busy=False),
        RoundProcess(5, [1e-3, 0.0, 1e-3], ok=True, busy=False),  # a sample that cannot be a time
        RoundProcess(6, [4e-3], ok=True, busy=False),
        RoundProcess(7, samples, ok=True, busy=False, replaced=True),  # measured again after the rounds
    ]
    assert round_medians(processes) == {0: 2e-3, 6: 4e-3}
    assert round_medians(processes, quiet_only=False) == {0: 2e-3, 1: 2e-3, 6: 4e-3}


def test_same_reads_same_only_within_2_percent_whichever_way_a_pair_was_compared():
    assert too_wide_for_same("same", 0.985, 1.019, "paired-rounds floor") is False
    assert too_wide_for_same("same", 0.97, 1.01, "paired-rounds floor") is True
    assert too_wide_for_same("same", 0.97, 1.01, "noise floor") is True
    assert too_wide_for_same("same", 0.97, 1.01, "threshold") is False  # the user said what size matters
    assert too_wide_for_same("slower", 1.03, 1.08, "noise floor") is False


@pytest.mark.slow
def test_the_runs_own_pair_verdict_and_jitlab_compare_count_the_same_rounds_after_slow_canary_readings(
    tmp_path, capsys, monkeypatch
):
    """A real `jitlab run NEW --against OLD` in which most processes follow a slow canary reading
    (the mark's factor set to 1: every reading slower than the run's fastest so far marks its
    process, some of which are measured again after the rounds): the rounds the run decided its pair
    on, its change and verdict, are those `jitlab compare` of the stored runs reports. (Before, the
    run left every such round out and the comparison kept those not measured again.)"""
    from jitlab.engine import pairs, rounds, slow_spells

    monkeypatch.setattr(slow_spells, "SLOW_CANARY", 1.0)
    decided = []  # the two builds' cell states, as the run decides on them

    def decide_and_keep(a, b):
        pairs.decide_pair(a, b)
        decided.append((a, b))

    monkeypatch.setattr(rounds, "decide_pair", decide_and_keep)
    old, new = tmp_path / "old.py", tmp_path / "new.py"
    spin_workload(old, 2e-4)
    spin_workload(new, 2.4e-4)
    store = str(tmp_path / "s.db")
    code = main([
        "run", str(new), "--against", str(old), "--processes", "3..16", "--budget", "0.2",
        "--store", store, "--no-plot", "--json",
    ])  # fmt: skip
    assert code in (0, 1)
    (printed,) = json.loads(capsys.readouterr().out)["against"]["cells"]  # what the run printed
    assert main(["compare", "1", "2", "--store", store, "--json"]) == 0
    (compared,) = json.loads(capsys.readouterr().out)["cells"]
    for key in ("verdict", "ratio", "ratio_ci95", "basis", "reason"):
        assert printed[key] == compared[key]

    (cell_old,), (cell_new,) = Store(store).cells(1), Store(store).cells(2)
    # the rule, read off the stored records: a round counts when both builds' processes in it
    # succeeded, neither waited for a CPU and neither was replaced by a process measured again
    # (whose samples the stored cell no longer pools), slow canary reading or not
    counted = set.intersection(*({
        d["round"] for d in c.process_details
        if type(d.get("round")) is int and d.get("status") == "ok" and not _busy(d)
        and d.get("replaced_by") is None
    } for c in (cell_old, cell_new)))  # fmt: skip
    # the run's own cell states, told apart by their first process's samples
    state_old, state_new = decided[-1]
    if list(state_old.results[0].samples_s[:3]) != list(cell_old.samples_s[:3]):
        state_old, state_new = state_new, state_old
    assert list(state_old.results[0].samples_s[:3]) == list(cell_old.samples_s[:3])
    assert len(state_old.results) == len(cell_old.process_details)  # the processes measured again too
    change = pairs.pair_change(state_old, state_new)
    if len(counted) < 3:  # too few quiet rounds (a loaded machine): compared as separate runs, alike
        assert change is None and compared["basis"] != "paired rounds"
        return
    assert change is not None and change.rounds == len(counted)
    marked = {
        d["round"]
        for c in (cell_old, cell_new)
        for d in c.process_details
        if "drift canary" in (d.get("slow_spell") or "")
    }
    assert counted & marked, (
        "no round after a slow canary reading ran quiet for both builds: what this test is about"
    )
    assert compared["basis"] == "paired rounds"
    assert f"(paired over {change.rounds} rounds measured side by side)" in compared["reason"]
    assert compared["ratio"] == pytest.approx(change.ratio, rel=1e-12)
    counts = (sum(len(r.samples_s) for r in s.results) for s in (state_old, state_new))
    assert compared["verdict"] == paired_verdict(change, *counts)[0]
    measured = sum(type(r.round) is int for r in state_old.results)
    if measured < 16 and state_old.stopped is None:
        # the pair stopped on its verdict before its 16 rounds: the verdict printed is a decided one
        assert compared["verdict"] in ("same", "slower", "faster")


def _busy(details: dict) -> bool:
    load = Load.from_json(details.get("load"))
    return bool(load and load.busy)
