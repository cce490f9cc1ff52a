"""Two builds measured side by side (`jitlab run NEW --against OLD`): partners stay next to each
other in every round, get as many processes, and a pair takes another round while its *paired*
interval (drift taken out) is wider than the target, or its verdict undecided."""

import numpy as np
from jitlab_testing import DATA

from jitlab.engine.dispatch import LocalDispatcher
from jitlab.engine.pairs import MIN_VERDICT_ROUNDS
from jitlab.engine.plan import PlannedCell, paired_plan
from jitlab.engine.rounds import CellState, record, round_order
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.process_result import ProcessResult
from jitlab.stats.comparison import paired_verdict
from jitlab.stats.paired import paired_change

LOCAL = LocalDispatcher().nodes[0]


def process(median: float, rng: np.random.Generator, **extra) -> dict:
    samples = list(median * np.exp(rng.normal(0.0, 0.002, 20)))
    return ProcessResult.from_dict(
        {"status": "ok", "processes_planned": 3, "samples_s": samples, "wall_s": 0.5, **extra}
    )


def pair(**policy) -> tuple[CellState, CellState]:
    spec = CellSpec("fixed-work", "python", 200_000, policy=TimingPolicy(processes=3, **policy))
    old, new = CellState(spec, None, "cell-0"), CellState(spec, None, "cell-1")
    old.partner, new.partner = new, old
    return old, new


def run_pair(old: CellState, new: CellState, speeds, ratio: float, seed: int = 0) -> int:
    """Rounds at the machine speeds given, B `ratio` times A's time, until both are done."""
    rng = np.random.default_rng(seed)
    rounds = 0
    for index, speed in enumerate(speeds):
        if old.done and new.done:
            break
        first, second = (old, new) if index % 2 else (new, old)  # either order within a round
        for state in (first, second):
            scale = ratio if state is new else 1.0
            record(state, process(speed * scale * float(np.exp(rng.normal(0, 0.01))), rng), index, LOCAL)
        rounds += 1
    return rounds


def test_partners_decide_together_and_get_as_many_processes():
    old, new = pair(target_ci=0.01, max_processes=30)
    drifting = [1.0, 1.06, 0.95, 1.04, 0.97, 1.08, 0.93, 1.02] * 4  # the machine drifts ±8%
    rounds = run_pair(old, new, drifting, 1.05)
    assert old.done and new.done
    assert len(old.results) == len(new.results) == rounds
    # the drift is the same for both builds in a round: the paired interval closes long before 30
    assert rounds < 30


def test_a_pair_whose_rounds_disagree_takes_more_rounds_up_to_the_most_allowed():
    old, new = pair(target_ci=0.001, max_processes=6)
    rounds = run_pair(old, new, [1.0] * 20, 1.05)
    assert rounds == 6 and old.done and new.done


def test_the_first_of_a_round_waits_for_its_partner_and_the_second_settles_both():
    old, new = pair(target_ci=0.5, max_processes=20)
    rng = np.random.default_rng(3)
    for index in range(MIN_VERDICT_ROUNDS):
        assert not old.done
        assert record(old, process(1.0, rng), index, LOCAL) is None  # waits: new has not measured it
        settled = record(new, process(1.05, rng), index, LOCAL)
    assert old.done and new.done and settled is old


def test_a_failed_process_ends_the_pairs_adding():
    old, new = pair(target_ci=0.001, max_processes=10)
    rng = np.random.default_rng(4)
    for index in range(3):
        record(old, process(1.0, rng), index, LOCAL)
        failed = ProcessResult(status="failed", reason="killed", wall_s=0.1)
        record(new, failed if index == 2 else process(1.0, rng), index, LOCAL)
    assert old.done and new.done and len(old.results) == 3


def test_partners_stay_next_to_each_other_in_every_shuffled_round():
    states = []
    for _ in range(4):
        old, new = pair()
        states += [old, new]
    alone = CellState(states[0].spec, None, "alone")
    states.insert(3, alone)
    orders = set()
    for round_index in range(1, 12):
        order = round_order(states, round_index, "seed")
        assert sorted(map(id, order)) == sorted(map(id, states))
        for k, state in enumerate(order):
            if state.partner is not None:
                neighbours = order[max(k - 1, 0) : k + 2]
                assert any(other is state.partner for other in neighbours)
        orders.add(tuple(id(s) for s in order))
    assert len(orders) > 1  # shuffled


def test_the_plan_puts_each_new_cell_right_after_the_same_old_cell():
    spec = CellSpec("w", "python", 10)
    other = CellSpec("w", "numpy", 10)
    only_new = CellSpec("w", "python", 20)
    plan = paired_plan(
        [PlannedCell(spec), PlannedCell(only_new), PlannedCell(other)],
        [PlannedCell(other), PlannedCell(spec)],
        7,
    )
    assert [(c.spec.backend, c.spec.size, c.run_id, c.partner) for c in plan] == [
        ("python", 10, 7, 1),
        ("python", 10, None, 0),
        ("python", 20, None, None),
        ("numpy", 10, 7, 4),
        ("numpy", 10, None, 3),
    ]


def run_ratios(old: CellState, new: CellState, ratios: list[float]) -> int:
    """Rounds in which B's median is the given multiple of A's, until both are done."""
    rng = np.random.default_rng(7)
    for index, ratio in enumerate(ratios):
        if old.done and new.done:
            return index
        record(old, process(1.0, rng), index, LOCAL)
        record(new, process(ratio, rng), index, LOCAL)
    return len(ratios)


def test_a_pair_within_the_target_but_undecided_takes_more_rounds_until_its_verdict_is_clear():
    # a wide target is met after three rounds, but [-2%, +8%] decides nothing: the old rule stopped
    # there; the pair goes on until the interval clears the 1% floor
    old, new = pair(target_ci=0.5, max_processes=40)
    rounds = run_ratios(old, new, [1.03, 1.01, 1.05] * 13)
    assert old.done and new.done
    assert 3 < rounds < 40
    change = paired_change(_medians(old), _medians(new))
    verdict, reason, *_ = paired_verdict(change, 60, 60)
    assert verdict == "slower", reason


def test_identical_builds_end_same_once_the_interval_lies_within_two_percent():
    old, new = pair(target_ci=0.5, max_processes=40)
    rounds = run_ratios(old, new, [0.99, 1.01, 1.0] * 13)
    assert old.done and new.done and 3 < rounds < 40
    verdict, reason, *_ = paired_verdict(paired_change(_medians(old), _medians(new)), 60, 60)
    assert verdict == "same", reason


def test_a_pair_undecided_at_the_most_rounds_allowed_stops_there():
    old, new = pair(target_ci=0.5, max_processes=8)
    rounds = run_ratios(old, new, [0.95, 1.08, 1.0, 1.02] * 10)  # straddles the floor throughout
    assert rounds == 8 and old.done and new.done


def _medians(state: CellState) -> dict[int, float]:
    return {r.round: float(np.median(r.samples_s)) for r in state.results}


def test_against_without_processes_adds_rounds_until_the_verdict_is_clear_and_a_given_count_is_kept():
    from jitlab.engine.session import AGAINST_MAX_PROCESSES, RunRequest
    from jitlab.workloads.registry import load_workloads

    workloads = tuple(load_workloads(str(DATA / "rounds_workload.py")))
    both = {"target": "new.py", "workloads": workloads, "against": "old.py", "against_workloads": workloads}
    assert RunRequest(**both).policy().max_processes == AGAINST_MAX_PROCESSES
    assert RunRequest(**both).policy().processes == 3
    assert RunRequest(**both, processes=5).policy().max_processes == 0  # the user's count is kept
    assert RunRequest(**both, processes=3, max_processes=9).policy().max_processes == 9
    assert RunRequest(**both, measure="instructions").policy().max_processes == 0  # counts repeat
    assert RunRequest("new.py", workloads).policy().max_processes == 0  # no --against: no adding


def test_a_pair_does_not_stop_on_its_verdict_before_the_rounds_a_verdict_needs():
    # a clear 5% change, decided by its interval after 3 rounds: looking at the verdict after every
    # round, a pair must still wait for MIN_VERDICT_ROUNDS (a same build was called slower after 4)
    old, new = pair(target_ci=0.03, max_processes=40)
    rounds = run_pair(old, new, [1.0] * 40, 1.05)
    assert old.done and new.done
    # the trimmed mean's interval rests on fewer degrees of freedom (6 of 10 rounds kept), so its
    # error-spending look may take a round or two past MIN_VERDICT_ROUNDS on such clean rounds
    assert MIN_VERDICT_ROUNDS <= rounds <= MIN_VERDICT_ROUNDS + 2
    change = paired_change(
        {k: float(np.median(r.samples_s)) for k, r in enumerate(old.results)},
        {k: float(np.median(r.samples_s)) for k, r in enumerate(new.results)},
    )
    assert paired_verdict(change, 400, 400)[0] == "slower"


def test_a_pair_looked_at_every_round_spends_its_error_rate_across_the_looks():
    # after the round ratios of a build against its copy on the quiet VM, which a pair looking at its
    # 95% verdict after every round stopped on after 14 rounds, calling it "faster -2.8% [-4.5%,
    # -1.1%]". The trimmed mean sets that run's one far round (1.105) aside and one look at it says
    # undecided; these 14 rounds lean the same way with no far round and a smaller spread, so one
    # look at 95% still says faster and the error-spending look does not
    ratios = [
        1.043,
        1.026,
        1.053,
        1.023,
        1.010,
        1.057,
        1.035,
        1.005,
        1.018,
        1.013,
        1.005,
        1.012,
        1.027,
        1.043,
    ]
    old, new = pair(target_ci=0.03, max_processes=80)
    rng = np.random.default_rng(6)
    for index, ratio in enumerate(ratios):
        record(old, process(ratio, rng), index, LOCAL)
        record(new, process(1.0, rng), index, LOCAL)
    change = paired_change(
        {k: float(np.median(r.samples_s)) for k, r in enumerate(old.results)},
        {k: float(np.median(r.samples_s)) for k, r in enumerate(new.results)},
    )
    assert paired_verdict(change, 280, 280)[0] == "faster"  # what one look at 95% says
    assert not old.done and not new.done  # the pair takes more rounds before it calls it
