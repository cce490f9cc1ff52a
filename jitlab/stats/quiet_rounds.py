"""Which rounds of two builds measured side by side count (`round_medians`, the one rule of
`jitlab run NEW --against OLD` and of `jitlab compare`), and will a busy machine give a pair the
quiet rounds it needs (the stopping rule of a pair on a machine that stays busy).

A round counts for a pair when both builds' processes in it succeeded and neither waited for a CPU
(or lost time to the hypervisor) beyond `jitlab.engine.load.BUSY_SHARE` of its sampling: `busy`,
what the worker read from /proc. Nothing else keeps a round out:

- a busy round is left out because its two processes ran one after the other and each waited its
  own share of the time for a CPU (beside two CPU-bound processes on the 2-core VM, 30% to 65%), so
  the round's ratio carries the difference between those waits as well as the code's (a busy
  round's ratio strayed 23% to 24% from round to round, a quiet one's about 6%);
- a slow drift-canary reading alone (the parent's probe before the process ran 25% slower than the
  run's fastest, `jitlab.engine.slow_spells`) does not: the canary measures the machine's drift,
  which both builds of a round meet and the pairing takes out. In 12 stored pairs measured beside
  two or three CPU-bound processes (commits 00cac6a and c3afdc5), rounds that were quiet but followed
  a slow reading (6 to 41 per pair) strayed 4% to 9% from round to round, as quiet rounds of quiet
  runs do (1% to 7%), and centred on the true change (+4.5% to +6.8% for the 5% slower build, -0.1%
  to +2.6% for its copy); paired with them, no pair was called wrongly and 6 of the 12 were decided,
  against 1 of 12 without them (0 to 11 rounds were left; `python benchmarks/busy_rounds.py STORE`);
- a process measured again after a slow spell leaves its round (the stored cell no longer pools its
  samples, so `jitlab compare` cannot pair them), and its replacement (round "again") pairs with
  nothing (`RoundProcess.replaced`, set alike by the run and by `jitlab compare`). So the run
  deciding whether a pair needs another round (`jitlab.engine.pairs`) counts the very rounds that
  `jitlab compare` of the stored runs pairs later. (Once the run left out every round after a slow
  reading and the comparison only those measured again: with two CPU-bound processes beside it, a
  pair took all its 80 rounds while the comparison decided from 36 to 45. Until November 30 the run
  kept a replaced process's round, which the comparison could not pair: the two differed by a round.)

On a machine that stays busy no round counts, and a pair used to take all its rounds (80 by default,
about two minutes for a pair of 10 ms calls) before it was compared as separate runs and called
"undecided".

The rule asks two questions of the rounds measured so far, and stops when the answer to both says
the budget cannot bring a verdict:

- how many quiet rounds the pair needs (`quiet_rounds_needed`): with fewer than
  `MIN_PAIRED_ROUNDS` quiet rounds, that many (no paired change exists below it, and nothing else is
  known: the busy rounds' spread carries the load too, so it is not taken for the quiet one); from
  three on, the fewest quiet rounds at which the 95% interval of their trimmed mean log ratio would
  lie outside the ±1% paired floor (a call) or within ±2% ("same"), for the most favourable mean
  within the 95% interval of the quiet rounds' trimmed mean so far and their winsorized spread at its
  lower 95% bound, with normal quantiles. The rounds are read as the paired change reads them
  (`jitlab.stats.paired.TrimmedRounds`, Yuen's): rounds far out, which one slow process makes now
  and then, do not raise the need (with the plain mean and spread, which it used before, two
  far rounds in 30 raised it from 12 to 25). The need is an optimistic one: a few rounds say little of the mean or the
  spread, and a need read too large would stop a pair that a quiet spell could still decide (with
  the estimates themselves, 3 of 20 stored quiet pairs of a 40-round budget would have stopped
  early after one or two busy rounds; with the bounds, none of them does, at a budget of 40 or 80:
  `benchmarks/busy_rounds.py`);
- how many quiet rounds the rounds left will give at most (`quiet_share_bound`): the one-sided 95%
  Clopper-Pearson upper bound of the share of rounds that ran quiet, times the rounds left. With no
  quiet round in r rounds that bound is 1 - 0.05^(1/r), about 3/r; with the default 80 rounds, a
  machine busy in every round stops a pair after 40 of them (at most 2.9 quiet rounds expected in
  the 40 left, fewer than the 3 it needs).

A pair stops when it has fewer quiet rounds than it needs, a quiet machine could still give them
within the budget (else the busy rounds are not what stands in the way, and the pair keeps its
rounds as before), and the quiet rounds to come at that bound fall short. On a quiet machine every
round is quiet, the bound is 1, and the rule never stops a pair.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from jitlab.stats import hierarchical, paired
from jitlab.stats.comparison import SMALL_CHANGE
from jitlab.stats.paired import MIN_PAIRED_ROUNDS, PAIRED_FLOOR

#: confidence of the bound on the quiet share, and of the interval the need is worked out for
CONFIDENCE = 0.95
#: what the warning of a cell whose pair stopped early says (`jitlab compare` looks for it)
STOPPED_EARLY = "so the pair stopped before its budget"


@dataclass(frozen=True)
class RoundProcess:
    """One process of a cell measured in rounds, as the pairing sees it (from a worker's result while
    the run goes on, or from a stored cell's process record)."""

    #: the round it ran in (an int); anything else ("again": measured again after the rounds, or
    #: None: not measured in rounds) belongs to no round
    round: object
    samples_s: Sequence[float]
    ok: bool
    #: it waited for a CPU, or lost time to the hypervisor (`jitlab.engine.load.Load.busy`)
    busy: bool
    #: measured in a slow spell and measured again after the rounds: the cell's figure no longer
    #: pools its samples (the stored cell does not keep them), so its round counts for no pair
    replaced: bool = False


def round_medians(processes: Iterable[RoundProcess], quiet_only: bool = True) -> dict[int, float]:
    """{round: median of the samples of the process measured in it}, for the processes that ran in a
    round, succeeded, were not replaced and have positive samples; `quiet_only`: those that also did
    not run busy (the
    rounds a pair counts: see the module docstring)."""
    medians = {}
    for process in processes:
        if type(process.round) is not int or not process.ok or process.replaced or not len(process.samples_s):
            continue
        if quiet_only and process.busy:
            continue
        samples = np.asarray(process.samples_s, dtype=np.float64)
        if samples.min() > 0:
            medians[process.round] = float(np.median(samples))
    return medians


def quiet_share_bound(quiet: int, rounds: int, confidence: float = CONFIDENCE) -> float:
    """One-sided Clopper-Pearson upper bound of the share of rounds that run quiet, from `quiet`
    of `rounds` (1.0 when every round was quiet, or none was measured)."""
    if rounds <= 0 or quiet >= rounds:
        return 1.0
    from scipy.stats import beta  # here, not at import: scipy costs ~0.6 s on every jitlab command

    return float(beta.ppf(confidence, quiet + 1, rounds - quiet))


def quiet_rounds_needed(log_ratios: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """The fewest quiet rounds at which a pair's paired interval could be decided: outside
    ±`PAIRED_FLOOR` (a call) or within ±`SMALL_CHANGE` ("same"), for any trimmed mean within the
    95% interval of the quiet rounds' log ratios so far and their winsorized spread at its lower 95%
    bound (a few rounds say little of either; an optimistic need errs towards taking another round).
    The rounds are read as the paired change reads them (`paired.TrimmedRounds`): one far round
    neither moves the mean nor inflates the spread. `MIN_PAIRED_ROUNDS` with fewer rounds than that
    (or no spread)."""
    if len(log_ratios) < MIN_PAIRED_ROUNDS:
        return float(MIN_PAIRED_ROUNDS)
    from scipy.stats import chi2

    trimmed = paired.TrimmedRounds.of(log_ratios)
    if trimmed.winsorized_spread == 0.0:
        return float(MIN_PAIRED_ROUNDS)
    mean, reach, _ = trimmed.interval(confidence)
    low, high = mean - reach, mean + reach
    farthest = max(abs(low), abs(high))  # the mean that a call needs fewest rounds for
    nearest = 0.0 if low <= 0.0 <= high else min(abs(low), abs(high))  # and "same"
    dof = trimmed.kept - 1
    least_spread = trimmed.winsorized_spread * math.sqrt(dof / float(chi2.ppf(confidence, dof)))
    z = hierarchical.t_quantile(0.5 + confidence / 2, math.inf)
    floor, small = math.log1p(PAIRED_FLOOR), math.log1p(SMALL_CHANGE)
    gaps = [gap for gap in (farthest - floor, small - nearest) if gap > 0]
    if not gaps:
        return math.inf
    # the standard error of a trimmed mean of m rounds: spread / ((1 - 2 TRIM) sqrt(m)) for large m;
    # with fewer rounds than trimming starts at, none is cut (spread / sqrt(m)), which is the need
    # when it is that small
    untrimmed = (z * least_spread / max(gaps)) ** 2
    if untrimmed < paired.FIRST_TRIMMED_ROUNDS:
        return float(max(MIN_PAIRED_ROUNDS, math.ceil(untrimmed)))
    return float(max(paired.FIRST_TRIMMED_ROUNDS, math.ceil(untrimmed / (1 - 2 * paired.TRIM) ** 2)))


@dataclass(frozen=True)
class QuietForecast:
    """A pair's rounds so far, the quiet rounds among them, and what the rounds left can give."""

    rounds: int
    quiet: int
    #: rounds the budget still allows
    left: int
    #: quiet rounds the pair needs (`quiet_rounds_needed`)
    needed: float
    #: the 95% upper bound of the quiet share (`quiet_share_bound`)
    share_bound: float

    @property
    def expected(self) -> float:
        """The most quiet rounds the rounds left are expected to give (at the bound)."""
        return self.share_bound * self.left

    @property
    def hopeless(self) -> bool:
        """The machine stays too busy for the budget: the pair lacks quiet rounds, a quiet machine
        could give them in the rounds left, and a machine as busy as this one will not."""
        return self.quiet < self.needed <= self.quiet + self.left and self.quiet + self.expected < self.needed

    def phrase(self) -> str:
        """'the machine was busy in 40 of 40 rounds, so the pair stopped ...; run again when it is
        quiet, or count instructions ...'"""
        busy = self.rounds - self.quiet
        quiet = "none" if self.quiet == 0 else f"{self.quiet}"
        needed = int(self.needed)
        return (
            f"the machine was busy in {busy} of {self.rounds} rounds (a process of either build waited for a "
            f"CPU), {STOPPED_EARLY}: {quiet} ran quiet for both builds, it needs {needed} for a paired verdict, and the "
            f"{self.left} rounds left would give at most {self.expected:.1f} at the quiet share the rounds so far "
            f"allow ({CONFIDENCE:.0%} bound {self.share_bound:.0%}); run again when the machine is quiet, "
            "or count instructions (--measure instructions), which the load does not change"
        )


def forecast(quiet_log_ratios: Sequence[float], rounds: int, max_rounds: int) -> QuietForecast:
    """The forecast of a pair that measured `rounds` rounds (at most `max_rounds`), the quiet ones'
    log ratios given."""
    quiet = len(quiet_log_ratios)
    return QuietForecast(
        rounds=rounds,
        quiet=quiet,
        left=max(max_rounds - rounds, 0),
        needed=quiet_rounds_needed(quiet_log_ratios),
        share_bound=quiet_share_bound(quiet, rounds),
    )
