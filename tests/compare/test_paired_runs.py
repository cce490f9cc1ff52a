"""Two builds measured side by side (`jitlab run NEW --against OLD`): the comparison pairs their
rounds, which takes out the machine's drift that hides a 5% change between separate runs; rounds
that ran busy are left out; and the command refuses what it cannot do."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from jitlab_testing import spin_workload

from jitlab.cli import main
from jitlab.compare.paired import UNPAIRED, compare_paired_cells, compared_apart
from jitlab.compare.runs import compare_records
from jitlab.stats.comparison import SampleComparison
from jitlab.store import CellRecord, Store


def busy_load() -> dict:
    return {
        "seconds": 1.0,
        "wait_share": 0.4,
        "steal_share": 0.0,
        "cpu_share": 0.6,
        "loadavg": 4.0,
        "cpus": 2,
    }


def cell(speeds, factor=1.0, seed=0, busy=()) -> CellRecord:
    """A cell whose process k ran in round k at machine speed speeds[k] (the same for both builds)."""
    rng = np.random.default_rng(seed)
    samples, index, details = [], [], []
    for k, speed in enumerate(speeds):
        offset = rng.normal(0, 0.01)  # what separates two processes of the same code
        samples += list(1e-3 * factor * speed * np.exp(offset + rng.normal(0, 0.002, 20)))
        index += [k] * 20
        details.append(
            {"process": k, "round": k, "status": "ok", **({"load": busy_load()} if k in busy else {})}
        )
    return CellRecord(
        1, "w", "python", 1, {}, "ok", None, samples_s=tuple(samples), sample_process=tuple(index),
        process_details=tuple(details),
    )  # fmt: skip


#: a machine whose speed wanders by ±6% from round to round
DRIFT = list(np.exp(np.random.default_rng(42).normal(0, 0.04, 20)))


def test_a_5_percent_slower_build_measured_side_by_side_is_called_slower_where_separate_runs_cannot_tell():
    old, new = cell(DRIFT, seed=1), cell(DRIFT, factor=1.05, seed=2)
    paired = compare_paired_cells(old, new)
    assert paired is not None
    stats, logs = paired
    assert stats.verdict == "slower" and stats.basis == "paired rounds"
    assert stats.ratio == pytest.approx(1.05, abs=0.015)
    assert "paired over 20 rounds" in stats.reason and logs.size > 100
    separate, _ = compare_records(old, new)  # the same samples as two runs: the drift hides it
    assert separate.verdict == "undecided"


def test_the_same_build_measured_side_by_side_is_not_called_different():
    for seed in range(10):
        stats, _ = compare_paired_cells(cell(DRIFT, seed=2 * seed), cell(DRIFT, seed=2 * seed + 1))
        assert stats.verdict in ("same", "undecided"), stats.reason


def test_busy_rounds_are_left_out_and_too_few_quiet_ones_are_no_pairing():
    old = cell(DRIFT[:6], seed=3, busy={0, 1, 2})
    new = cell(DRIFT[:6], factor=1.05, seed=4, busy={3, 4})
    assert compare_paired_cells(old, new) is None  # round 5 alone ran quiet for both
    some_busy = cell(DRIFT, seed=3, busy={0, 1}), cell(DRIFT, factor=1.05, seed=4, busy={2})
    stats, _ = compare_paired_cells(*some_busy)
    assert "paired over 17 rounds" in stats.reason


@pytest.mark.slow
def test_run_against_measures_both_builds_side_by_side_and_gates_on_the_paired_change(tmp_path, capsys):
    old = spin_workload(tmp_path / "old.py", 1e-3)
    new = spin_workload(tmp_path / "new.py", 1.5e-3)
    store = str(tmp_path / "s.db")
    args = [
        "run",
        new,
        "--against",
        old,
        "--processes",
        "4",
        "--budget",
        "0.3",
        "--store",
        store,
        "--no-plot",
    ]
    code = main(args)
    printed = capsys.readouterr()
    assert "run 2 against run 1" in printed.out and "the other build as run 1" in printed.out
    assert "spin · python · n=1 (run 1: the other build): " in printed.err  # the progress lines
    runs = Store(store).runs()
    assert [r.target for r in runs] == [old, new] and all(r.status == "finished" for r in runs)
    assert main(["compare", "1", "2", "--store", store, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (compared,) = data["cells"]
    assert data["notes"] == [
        "runs 1 and 2 were measured side by side (`jitlab run --against`): wall-time changes are paired "
        "per round, which takes the machine's drift out"
    ]
    assert compared["processes"][0] == compared["processes"][1] >= 3  # as many rounds each
    if compared["basis"] == "paired rounds":
        assert compared["verdict"] == "slower" and code == 1  # +50%: the gate's 5% by default
        assert compared["ratio"] == pytest.approx(1.5, rel=0.05)
    else:  # the machine was busy in most rounds: compared as separate runs, never called wrongly
        assert UNPAIRED in compared["reason"] and compared["verdict"] in ("slower", "undecided")


def test_run_against_refuses_what_it_cannot_do(tmp_path, capsys):
    old = spin_workload(tmp_path / "old.py", 1e-4)
    store = str(tmp_path / "s.db")
    common = ["run", old, "--store", store, "--no-plot", "--against"]
    assert main([*common, old, "--resume", "1"]) == 2
    assert "--against cannot resume a run" in capsys.readouterr().err
    assert main([*common, old, "--baseline", "1"]) == 2
    assert "drop --baseline" in capsys.readouterr().err
    assert main([*common, "pi"]) == 2
    assert "defines no workload named as one of" in capsys.readouterr().err
    assert main([*common, str(tmp_path / "missing.py")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "s.db").exists() or Store(store).runs() == []


def test_a_paired_change_not_significant_is_same_only_when_its_interval_is_small():
    from jitlab.stats.comparison import compare_paired
    from jitlab.stats.paired import paired_change

    rounds = range(8)
    narrow = paired_change({k: 1.0 for k in rounds}, {k: 1.0 + 0.004 * (-1) ** k for k in rounds})
    wide = paired_change({k: 1.0 for k in rounds}, {k: 1.0 + (0.04 if k % 2 else -0.035) for k in rounds})
    assert compare_paired(narrow, 40, 40)[0].verdict == "same"
    stats, _ = compare_paired(wide, 40, 40)
    assert stats.verdict == "undecided" and "reaches beyond ±2%" in stats.reason
    assert compare_paired(wide, 40, 40, threshold=0.1)[0].verdict == "same"  # the user's threshold decides


def test_two_paired_cells_get_independent_replicates_for_a_geometric_mean():
    from jitlab.stats.paired import paired_change, paired_replicates

    rounds = range(10)
    one = paired_change({k: 1.0 for k in rounds}, {k: 1.05 + 0.01 * (k % 3) for k in rounds})
    two = paired_change({k: 1.0 for k in rounds}, {k: 1.05 + 0.01 * (k % 4) for k in rounds})
    a, b = paired_replicates(one, 0.95, 2000), paired_replicates(two, 0.95, 2000)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.1  # one shared seed made them move together (corr 1)
    assert np.array_equal(a, paired_replicates(one, 0.95, 2000))  # the same cell: the same replicates


def test_a_url_is_not_taken_for_a_spin_workload(tmp_path, capsys):
    old = spin_workload(tmp_path / "old.py", 1e-4)
    store = str(tmp_path / "s.db")
    assert main(["run", old, "--against", "https://example.com/old.py", "--store", store]) == 2
    assert main(["run", "https://example.com/new.py", "--store", store]) == 2
    assert capsys.readouterr().err.count("looks like a URL") == 2
    assert not (tmp_path / "s.db").exists() or Store(store).runs() == []


def test_a_side_by_side_cell_compared_apart_is_same_only_within_two_percent():
    wide = SampleComparison(1.002, 0.954, 1.050, 0.9, "same", 40, 40, reason="not significant: p=0.9")
    apart = compared_apart(wide)
    assert (
        apart.verdict == "undecided" and UNPAIRED in apart.reason and "most rounds ran busy" in apart.reason
    )
    narrow = replace(wide, ci_low=0.99, ci_high=1.015)
    assert compared_apart(narrow).verdict == "same" and UNPAIRED in compared_apart(narrow).reason
    asked = replace(wide, margin=0.10, margin_kind="threshold")  # the user's threshold decides
    assert compared_apart(asked).verdict == "same"
    slower = replace(wide, ratio=1.2, ci_low=1.1, ci_high=1.3, verdict="slower")
    assert compared_apart(slower).verdict == "slower"


def test_the_comparison_says_how_many_rounds_ran_busy_and_why_a_pair_stopped_early():
    from jitlab.compare.paired import busy_note
    from jitlab.engine.slow_spells import SLOW_WARNING
    from jitlab.stats.quiet_rounds import STOPPED_EARLY, forecast

    everything = set(range(6))
    old, new = cell(DRIFT[:6], seed=3, busy=everything), cell(DRIFT[:6], factor=1.05, seed=4, busy={0})
    assert busy_note(old, new) == "6 of 6 rounds ran busy for either build and were left out"
    word = SLOW_WARNING + forecast([], 6, 7).phrase()
    stopped = replace(old, warnings=(word,))
    assert busy_note(stopped, new) == (
        "6 of 6 rounds ran busy for either build and were left out; " + word.removeprefix(SLOW_WARNING)
    )
    separate, _ = compare_records(stopped, new)
    apart = compared_apart(separate, busy_note(stopped, new))
    assert UNPAIRED in apart.reason and STOPPED_EARLY in apart.reason
    assert busy_note(cell(DRIFT[:6], seed=3), cell(DRIFT[:6], seed=4)) is None  # no round left out
    some_busy = cell(DRIFT, seed=3, busy={0, 1}), cell(DRIFT, factor=1.05, seed=4, busy={2})
    stats, _ = compare_paired_cells(*some_busy)
    assert stats.reason.endswith("; 3 of 20 rounds ran busy for either build and were left out")
