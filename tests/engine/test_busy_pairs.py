"""A pair of builds (`jitlab run NEW --against OLD`) on a machine that stays busy stops before its
budget and says why: the rule of `jitlab.stats.quiet_rounds` on synthetic rounds, and a real run
beside CPU-bound processes."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from jitlab_testing import spin_workload
from scipy import stats

from jitlab.engine.load import Load
from jitlab.engine.rounds import CellState, merged, record
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.process_result import ProcessResult
from jitlab.stats.quiet_rounds import STOPPED_EARLY, forecast, quiet_rounds_needed, quiet_share_bound

LOCAL = None
BUSY = Load(1.0, 0.45, 0.0, 0.55, 3.2, 2).to_json()
QUIET = Load(1.0, 0.01, 0.0, 0.99, 0.3, 2).to_json()


def test_the_quiet_share_bound_is_the_clopper_pearson_one():
    for rounds in (5, 20, 40):
        # no quiet round in r: the bound p solves (1 - p)^r = 0.05
        assert quiet_share_bound(0, rounds) == pytest.approx(1 - 0.05 ** (1 / rounds))
    for quiet, rounds in ((3, 20), (10, 12)):
        bound = quiet_share_bound(quiet, rounds)
        # at the bound, seeing this few quiet rounds or fewer has a chance of 5%
        assert stats.binom.cdf(quiet, rounds, bound) == pytest.approx(0.05, abs=1e-9)
    assert quiet_share_bound(7, 7) == 1.0 and quiet_share_bound(0, 0) == 1.0


def test_the_quiet_rounds_a_pair_needs_are_the_fewest_its_quiet_rounds_allow():
    assert quiet_rounds_needed([]) == quiet_rounds_needed([0.05, 0.06]) == 3  # no paired change below 3
    # identical builds, rounds ±6% apart, read as the paired change reads them: 20% trimmed from each
    # end (6 of 10 kept), Yuen's interval on 5 degrees of freedom; its trimmed mean may be as far as
    # t(0.975, 5) * s * sqrt(9 / (6 * 5)) = 8.9% from 0, and the winsorized spread as low as
    # s * sqrt(5 / chi2(0.95, 5)); a call of a change that large needs the fewest rounds
    same = [0.06, -0.06] * 5
    spread = np.std(same, ddof=1)
    reach = stats.t.ppf(0.975, 5) * spread * math.sqrt(9 / 30)
    least = spread * math.sqrt(5 / stats.chi2.ppf(0.95, 5))
    untrimmed = (stats.norm.ppf(0.975) * least / (reach - math.log(1.01))) ** 2
    assert untrimmed < 5 and quiet_rounds_needed(same) == max(3, math.ceil(untrimmed)) == 3
    # a 5% slower build whose rounds agree decides at the least a paired change takes
    assert quiet_rounds_needed([0.05, 0.04, 0.06] * 3) == 3
    # more rounds at the same spread narrow the bounds: the need grows towards the large-sample need
    # of a 20% trimmed mean of normal rounds (its standard error about sigma / sqrt(0.94 m))
    rng = np.random.default_rng(0)
    needs = [quiet_rounds_needed(list(rng.normal(0.0, 0.06, n))) for n in (10, 30, 60)]
    assert needs == sorted(needs) and needs[-1] <= math.ceil((1.96 * 0.06 / math.log(1.02)) ** 2 / 0.94)


def test_far_rounds_do_not_change_the_quiet_rounds_a_pair_needs():
    # one process of a round now and then runs 30% to 60% slow (kurtosis up to 19 in stored pairs):
    # the forecast reads the rounds trimmed and winsorized, as the paired interval does, so rounds
    # made farther than they were leave the need where it was (the plain mean and spread of the
    # forecast before raised it from 12 to 25 rounds at sigma 0.05, from 20 to 23 at 0.08)
    for sigma in (0.05, 0.08):
        rounds = np.random.default_rng(0).normal(0.0, sigma, 30)
        far = rounds.copy()
        far[np.argmax(far)], far[np.argmin(far)] = 0.8, -0.7
        assert quiet_rounds_needed(list(far)) == quiet_rounds_needed(list(rounds)) > 3


def test_a_machine_busy_in_every_round_gives_up_halfway_and_a_quiet_one_never():
    stops = [r for r in range(1, 80) if forecast([], r, 80).hopeless]
    assert stops[0] == 40  # (1 - 0.05^(1/40)) * 40 left = 2.9 quiet rounds at most, 3 needed
    rng = np.random.default_rng(0)
    assert not any(forecast(list(rng.normal(0, 0.06, r)), r, 80).hopeless for r in range(3, 80))
    # a quiet machine cannot narrow a spread this wide within 80 rounds either: not the load's doing,
    # so the pair keeps its rounds as before
    wide = list(np.random.default_rng(1).normal(0.0, 0.3, 10))
    assert not forecast(wide, 20, 80).hopeless
    word = forecast([], 40, 80).phrase()
    assert word.startswith("the machine was busy in 40 of 40 rounds") and STOPPED_EARLY in word
    assert "none ran quiet for both builds, it needs 3" in word and "--measure instructions" in word


def process(median: float, rng: np.random.Generator, load: dict) -> ProcessResult:
    samples = list(median * np.exp(rng.normal(0.0, 0.002, 20)))
    return ProcessResult.from_dict(
        {"status": "ok", "processes_planned": 3, "samples_s": samples, "wall_s": 0.5, "load": load}
    )


def pair(max_processes: int) -> tuple[CellState, CellState]:
    spec = CellSpec(
        "fixed-work", "python", 200_000, policy=TimingPolicy(processes=3, max_processes=max_processes)
    )
    old, new = CellState(spec, None, "cell-0"), CellState(spec, None, "cell-1")
    old.partner, new.partner = new, old
    return old, new


def run_pair(old: CellState, new: CellState, busy, ratio: float = 1.05, seed: int = 0) -> int:
    """Rounds until both are done; `busy(k)`: whether round k runs busy (the ratios spread ±6%)."""
    rng = np.random.default_rng(seed)
    for index in range(200):
        if old.done and new.done:
            return index
        load = BUSY if busy(index) else QUIET
        record(old, process(1.0, rng, load), index, LOCAL)
        record(new, process(ratio * float(np.exp(rng.normal(0, 0.06))), rng, load), index, LOCAL)
    raise AssertionError("the pair never finished")


def test_a_pair_busy_in_every_round_stops_halfway_and_both_cells_say_why():
    old, new = pair(max_processes=80)
    rounds = run_pair(old, new, busy=lambda k: True)
    assert rounds == 40 and old.done and new.done
    assert old.stopped == new.stopped and STOPPED_EARLY in old.stopped
    for state in (old, new):
        warnings = merged(state).warnings
        assert [w for w in warnings if STOPPED_EARLY in w] == [state.stopped]
        assert state.stopped.startswith("slow spell: the machine was busy in 40 of 40 rounds")


def test_a_machine_that_still_gives_quiet_rounds_keeps_the_pairs_rounds():
    # quiet in one round of five: the quiet rounds keep coming, and what they need may still be met
    old, new = pair(max_processes=80)
    assert run_pair(old, new, busy=lambda k: k % 5 != 0, ratio=1.0, seed=3) > 40
    assert old.stopped is None
    # quiet for two rounds, then busy: it still needs a third, and the bound of the quiet share falls
    # with every busy round until the rounds left are not expected to give it
    old, new = pair(max_processes=80)
    rounds = run_pair(old, new, busy=lambda k: k not in (0, 1), ratio=1.0)
    assert 40 < rounds < 80 and STOPPED_EARLY in old.stopped and "2 ran quiet" in old.stopped


def test_slow_canary_readings_alone_do_not_stop_a_pair():
    """A round after a slow canary reading counts for the pair (`quiet_rounds.round_medians`: the
    canary measures the drift, which the pairing takes out), for its verdict and for the stop rule,
    as it does for the comparison of the stored runs. The pair keeps its rounds."""
    from jitlab.engine.pairs import pair_change

    old, new = pair(max_processes=30)
    rng = np.random.default_rng(5)
    for index in range(30):
        for state, ratio in ((old, 1.0), (new, 1.05)):
            result = process(ratio * float(np.exp(rng.normal(0, 0.06))), rng, QUIET)
            record(
                state,
                replace(result, slow_spell="the drift canary ran 80% slower than the run's fastest"),
                index,
                LOCAL,
            )
    assert len(old.results) == 30 and old.done and old.stopped is None
    assert pair_change(old, new).rounds == 30


def test_a_quiet_pair_decides_as_before_and_is_not_stopped_for_load():
    for seed in range(3):
        old, new = pair(max_processes=80)
        rounds = run_pair(old, new, busy=lambda k: k == 4, ratio=1.05, seed=seed)  # one busy round
        assert old.stopped is None and new.stopped is None and 3 < rounds < 80
    old, new = pair(max_processes=0)  # `--processes N`: exactly N rounds, busy or not
    assert run_pair(old, new, busy=lambda k: True) == 3 and old.stopped is None


@pytest.mark.slow
def test_a_pair_beside_cpu_bound_processes_stops_before_its_budget_with_the_word(tmp_path, capsys):
    """Twice as many CPU-bound processes as this machine has CPUs, and one more, each ended after
    600 s at the latest and by its pid when the run is done: every round runs busy, and the pair
    stops before the 20 rounds it may take, saying why in the cells and in the comparison. (With one
    more than the CPUs, 5 of 20 rounds of a sampling this short ran quiet on the 2-core VM: a new
    worker is scheduled ahead of long-running processes for a moment, and the pair rightly kept its
    rounds.) Where quiet rounds came all the same (the processes were once ended after 120 s, which
    a run slowed by other work beside it can outlast), the pair rightly keeps its rounds: then the
    rule, replayed on the stored rounds, must not have stopped it either."""
    from jitlab.cli import main
    from jitlab.compare.paired import round_medians
    from jitlab.engine.pairs import MIN_VERDICT_ROUNDS
    from jitlab.stats.paired import common_rounds
    from jitlab.store import Store

    old, new = tmp_path / "old.py", tmp_path / "new.py"
    spin_workload(old, 1e-4)
    spin_workload(new, 1e-4)
    store = str(tmp_path / "s.db")
    hogs = [
        subprocess.Popen(["timeout", "600", sys.executable, "-c", "while True: pass"])
        for _ in range(2 * len(os.sched_getaffinity(0)) + 1)
    ]
    try:
        code = main([
            "run", str(new), "--against", str(old), "--processes", "3..20", "--budget", "0.3",
            "--store", store, "--no-plot", "--json",
        ])  # fmt: skip
    finally:
        for hog in hogs:
            hog.terminate()
        for hog in hogs:
            hog.wait(timeout=30)
    assert code in (0, 1)
    cells = [c for run in Store(store).runs() for c in Store(store).cells(run.run_id)]
    assert len(cells) == 2
    rounds = {sum(type(d.get("round")) is int for d in c.process_details) for c in cells}
    assert len(rounds) == 1  # both builds as many rounds
    measured = rounds.pop()
    quiet_old, quiet_new = (round_medians(c, quiet_only=True) for c in cells)
    quiet = common_rounds(quiet_old, quiet_new)

    def hopeless(count: int) -> bool:  # the rule after `count` rounds, on the rounds stored
        logs = [float(np.log(quiet_new[k] / quiet_old[k])) for k in quiet if k < count]
        return forecast(logs, count, 20).hopeless

    if measured == 20:  # quiet rounds came: the rule must have had no reason to stop the pair
        assert not any(hopeless(count) for count in range(3, 20)), f"quiet rounds for both builds: {quiet}"
        return
    if not any(STOPPED_EARLY in w for w in cells[0].warnings):  # it stopped on its verdict
        assert len(quiet) >= MIN_VERDICT_ROUNDS, f"stopped after {measured} rounds, quiet: {quiet}"
        return
    assert hopeless(measured), f"stopped after {measured} rounds; quiet rounds for both builds: {quiet}"
    for cell in cells:
        (word,) = [w for w in cell.warnings if STOPPED_EARLY in w]
        assert "the machine was busy in" in word and "run again when the machine is quiet" in word
    (against,) = json.loads(capsys.readouterr().out)["against"]["cells"]
    assert STOPPED_EARLY in against["reason"]  # the comparison printed by the run itself
    assert main(["compare", "1", "2", "--store", store, "--json"]) == 0
    (compared,) = json.loads(capsys.readouterr().out)["cells"]
    assert STOPPED_EARLY in compared["reason"] and compared["verdict"] in ("same", "undecided")
