"""Two builds of the same cell measured side by side (`jitlab run NEW --against OLD`).

Each cell of one build has a partner, the same cell of the other build. Both are measured next to
each other in every round (`rounds.round_order`) and get as many processes, so that every round
gives one paired ratio (`jitlab.stats.paired`). With `--processes N..MAX`, the pair gets another
round while the interval of the *paired* change is wider than `--target-ci`: that interval is free
of the machine's drift, which each cell's own interval carries, so a pair settles in fewer rounds.

A pair also takes another round while its paired verdict is still "undecided" (the interval
straddles the ±1% floor, or is not significant yet reaches past ±2%), even once it is within the
target: a 5% slower build whose interval read [+0.9%, +5.6%] after the target was met is called
slower a few rounds later. Stopping on the verdict is a sequential test, which could inflate false
calls; here it stops only once the interval is also within `--target-ci` and the pair has at least
`MIN_VERDICT_ROUNDS` quiet rounds, and each look at the verdict spends only its share of the error
rate (the interval and the significance level it is decided on are Bonferroni-corrected for the
looks MAX allows), so a call of "different" needs the estimate several of its standard errors beyond
the floor on rounds enough to show their spread, and identical builds end
"same" (interval within ±2%) or "undecided" at MAX, as `benchmarks/loaded_verdicts.py` measures.

Only rounds in which neither build's process waited for a CPU count (a busy round's two processes
each waited their own share of it), by the one rule `jitlab compare` of the stored runs pairs on
(`jitlab.stats.quiet_rounds.round_medians`: a slow canary reading, or a process measured again
after the rounds, keeps no round out). And a pair stops on its verdict only where the comparison
printed after the run, on the same rounds, reaches the same verdict (at 95% it may call a change
that the corrected look took for "same"). So what a pair stopped on is what the run and `jitlab
compare` say of it. On a machine that stays busy a pair stops before MAX once the rounds left cannot
be expected to give it the quiet rounds it needs (`jitlab.stats.quiet_rounds.forecast`), and both
cells say why (`stopped`, a warning of the cell).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from jitlab.engine.load import Load
from jitlab.engine.slow_spells import SLOW_WARNING
from jitlab.engine.spec import WALL, CellSpec
from jitlab.process_result import ProcessResult
from jitlab.stats.comparison import DEFAULT_ALPHA, DEFAULT_CONFIDENCE, paired_verdict
from jitlab.stats.paired import MIN_PAIRED_ROUNDS, PairedChange, common_rounds, paired_change
from jitlab.stats.quiet_rounds import RoundProcess, forecast, round_medians

#: quiet rounds in common before a pair may stop on its verdict. The verdict is looked at after every
#: round, a sequential test: on the quiet VM a build compared with itself was called "slower +2.8%
#: [+1.5%, +4.1%]" after 4 rounds (1 of 10 pairs, `benchmarks/loaded_verdicts.py wall-paired`), its
#: interval resting on 3 degrees of freedom. With 10 rounds but every look at 95%, another was called
#: "faster -2.8% [-4.5%, -1.1%]" after 14 (1 of 10): so each look also spends only its share of the
#: error rate (`pair_wants_another`). A 5% slower build was decided in 16-54 rounds there.
MIN_VERDICT_ROUNDS = 10


class CellState(Protocol):
    """What pairing needs of a cell's state (`jitlab.engine.rounds.CellState`, which imports this)."""

    spec: CellSpec
    results: list[ProcessResult]
    planned: int
    done: bool
    partner: Any
    #: why the pair stopped before its budget (the machine stayed busy), a warning of the cell
    stopped: str | None


State = TypeVar("State", bound=CellState)


def pair_units(states: Sequence[State]) -> list[list[State]]:
    """The states in order, a pair of partners as one unit (where the first of them stands)."""
    units: list[list[State]] = []
    placed: set[int] = set()
    by_id = {id(state) for state in states}
    for state in states:
        if id(state) in placed:
            continue
        unit = [state]
        if state.partner is not None and id(state.partner) in by_id:
            unit.append(state.partner)
        placed.update(id(s) for s in unit)
        units.append(unit)
    return units


def decide_pair(a: CellState, b: CellState) -> None:
    """Both builds measured the same rounds: plan both alike. Another round while the paired
    change is not yet within the target (`TimingPolicy.max_processes` at most), else both are done:
    also when the machine stays too busy for the rounds left to give the quiet rounds it needs."""
    # at least the rounds a paired change needs, when the user asked for as many processes
    planned = max(a.planned, b.planned, min(a.spec.policy.processes, MIN_PAIRED_ROUNDS))
    count = len(a.results)
    if count < planned:
        a.planned = b.planned = planned
    elif pair_wants_another(a, b):
        why = busy_stop(a, b)  # None: the machine may still give it the quiet rounds it needs
        a.planned = b.planned = count if why else count + 1
        a.done = b.done = why is not None
        a.stopped = b.stopped = why
    else:
        a.planned = b.planned = count
        a.done = b.done = True


def pair_wants_another(a: CellState, b: CellState) -> bool:
    """Every process of both succeeded on wall time, fewer than MAX, and the paired change has
    fewer than `MIN_VERDICT_ROUNDS` rounds, or its 95% interval is wider than the target, or its
    verdict undecided."""
    policy = a.spec.policy
    if policy.measure != WALL or len(a.results) >= policy.max_processes:
        return False
    if not all(r.ok for r in (*a.results, *b.results)):
        return False
    counts = _sample_count(a.results), _sample_count(b.results)
    medians = _round_medians(a.results), _round_medians(b.results)
    return not settled(*medians, counts, policy.target_ci, policy.max_processes)


def settled(
    medians_a: dict[int, float],
    medians_b: dict[int, float],
    counts: tuple[int, int],
    target_ci: float,
    max_rounds: int,
) -> bool:
    """Whether a pair may stop on the quiet rounds' medians it has ({round: median} of each build;
    `counts`: each build's samples): its paired change is within `target_ci`, rests on at least
    `MIN_VERDICT_ROUNDS` rounds, and its verdict is decided by the corrected look and the same as
    the comparison printed after the run. `benchmarks/paired_replay.py` replays stored rounds
    through it."""
    change = paired_change(medians_a, medians_b)
    if change is None or change.half_width > target_ci or change.rounds < MIN_VERDICT_ROUNDS:
        return False
    # the verdict is looked at after every round from MIN_VERDICT_ROUNDS to MAX: each look spends
    # its share of the error rate (Bonferroni), so that looking often does not make a false call likely
    looks = max(1, max_rounds - MIN_VERDICT_ROUNDS + 1)
    strict = paired_change(medians_a, medians_b, confidence=1 - (1 - DEFAULT_CONFIDENCE) / looks)
    verdict, *_ = paired_verdict(strict, *counts, alpha=DEFAULT_ALPHA / looks)
    # the comparison printed after the run looks once, at 95%: where it would call a change that the
    # corrected look took for "same" (an interval within ±2% that a narrower one lifts past the ±1%
    # floor), the pair takes another round rather than stop on a verdict the run will not print
    return verdict in ("same", "slower", "faster") and verdict == paired_verdict(change, *counts)[0]


def pair_change(a: CellState, b: CellState) -> PairedChange | None:
    """The paired change of two builds' cells over the rounds both ran quiet, as the run sees it
    while it measures (and `jitlab compare` of the stored runs sees it after); None with fewer than
    `MIN_PAIRED_ROUNDS` such rounds."""
    return paired_change(_round_medians(a.results), _round_medians(b.results))


def busy_stop(a: CellState, b: CellState) -> str | None:
    """Why a pair that wants another round stops instead: the machine stayed busy in so many of its
    rounds that the rounds left will not give it the quiet ones it needs (None: take the round)."""
    quiet_a, quiet_b = _round_medians(a.results), _round_medians(b.results)
    logs = [float(np.log(quiet_b[k] / quiet_a[k])) for k in common_rounds(quiet_a, quiet_b)]
    outlook = forecast(logs, len(a.results), a.spec.policy.max_processes)
    return SLOW_WARNING + outlook.phrase() if outlook.hopeless else None


def _sample_count(results: Sequence[ProcessResult]) -> int:
    return sum(len(r.samples_s) for r in results)


def _round_medians(results: Sequence[ProcessResult]) -> dict[int, float]:
    """{round: median} of the rounds a cell's processes ran quiet in (`quiet_rounds.round_medians`)."""
    return round_medians(
        RoundProcess(r.round, r.samples_s, r.ok, _busy(r), replaced=r.replaced_by is not None)
        for r in results
    )


def _busy(result: ProcessResult) -> bool:
    load = Load.from_json(result.load)
    return bool(load and load.busy)
