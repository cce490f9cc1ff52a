"""Is B slower or faster than A? Statistics on two sets of raw timing samples.

The effect is the ratio of medians B/A (above 1: B is slower). A change is *called* only when it is
significant *and* its confidence interval lies wholly outside the noise floor of both cells (or an
explicit threshold): two runs of the same code differ by about as much as the processes within one
run differ, so a smaller change, however significant, is not evidence of a change in the code.
The floor is the most straying process, not the standard error of the pooled figure: the processes
of a run are spread over its duration and see the machine's speed change over it, and runs measured
minutes apart see it change between them. On the 2-core VM, with the standard error as the margin,
identical runs of 15-40 processes each were called different in 5 of 10 pairs (changes of 2.5% to
3.5%, the standard errors about 0.6%); more processes narrow a cell's interval, not the drift
between runs.

- Cells measured in several worker processes (`process_a`, `process_b`: the process of each sample):
  the uncertainty of each median comes from the hierarchical bootstrap of
  `jitlab.stats.hierarchical` (processes, then samples within them), corrected for few processes;
  the interval of the log ratio and its p-value use Student's t with Welch-Satterthwaite degrees of
  freedom, so p < alpha exactly when the (1 - alpha) interval excludes no change.
- Cells measured in one process (the pytest fixture, `--processes 1`, stores from before processes
  existed): a percentile bootstrap resampling each set, and the two-sided Mann-Whitney U test. One
  process cannot show how far another process of the same code would stray, so such a side's floor
  is what its own samples show between the thirds of its sampling (`segment_floor`), and never less
  than `ONE_PROCESS_FLOOR` (5%: on a 2-core VM, separate processes of identical code differed by
  several per cent where each process's samples agreed to 0.1%).
- Instruction counts (`jitlab run --measure instructions`): the same statistics, with a floor of at
  least `INSTRUCTION_FLOOR` (counts of one build vary by a few hundredths of a per cent between
  processes).

Every comparison carries its `reason`, a sentence saying why it was or was not called. Two identical
sample sets give p = 1 and ratio 1 and are never called different.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jitlab.stats import hierarchical
from jitlab.stats.paired import PAIRED_FLOOR, PairedChange, paired_replicates

#: significance level of the test
DEFAULT_ALPHA = 0.01
#: bootstrap replicates for the CI of the ratio of medians (one-process cells)
DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95
#: the smallest noise floor of a side measured in one process: it cannot show the spread between
#: processes, which on a shared machine is several per cent (the floor of a --fast run too)
ONE_PROCESS_FLOOR = 0.05
#: the smallest margin of a comparison of instruction counts (they vary by hundredths of a per cent)
INSTRUCTION_FLOOR = 0.005
#: "same" says the change is small: its 95% interval must lie within ±this, whatever the noise
#: floor (a floor of ±37% would otherwise let +63% read "same"); a wider interval is "undecided"
SAME_SPAN = 0.10
#: a significant change inside the noise floor is "same" only when its whole interval is this small
#: (inside an explicit threshold it is "same": the user said what size does not matter);
#: a larger one (+6.7% [+5.2%, +8.1%] inside a floor of ±8.7%: a real 5% slower build on the 2-core
#: VM) is "undecided": the data show a change, and the machine's drift between runs is as large
SMALL_CHANGE = 0.02
#: samples per third below which a one-process side's segments show nothing
_SEGMENT_MIN = 3
#: the smallest margin a change must clear when either side comes from a `jitlab run --fast` run
#: (one process, a looser target: its noise floor is not measured and its samples are few)
FAST_NOISE_FLOOR = ONE_PROCESS_FLOOR


@dataclass(frozen=True)
class SampleComparison:
    """B against A: ratio of medians (B/A) with its CI, the test's p-value, and the verdict."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str  # faster | slower | same | undecided (load, drift or noise hide it) | too few samples
    count_a: int
    count_b: int
    processes_a: int = 1
    processes_b: int = 1
    #: each cell's noise floor (None: one process, not measurable)
    noise_floor_a: float | None = None
    noise_floor_b: float | None = None
    #: how far outside no change the interval had to lie to be called, and where that came from:
    #: "noise floor", "one-process floor" (a side measured in one process) or "threshold"
    margin: float = 0.0
    margin_kind: str = "noise floor"
    #: why the verdict: "called: slower +5.1% [+4.6%, +5.7%] ...", "not significant: p=0.2" ...
    reason: str = ""
    #: what was compared: "wall time", "cpu time" (wall time carried load), "instructions" or "paired
    #: rounds" (wall time of two builds measured side by side: `jitlab.stats.paired`)
    basis: str = "wall time"

    @property
    def change(self) -> float:
        """Relative change of the median: +0.10 means B takes 10% longer than A."""
        return self.ratio - 1.0

    @property
    def significant(self) -> bool:
        return self.verdict in ("faster", "slower")

    @property
    def decided(self) -> bool:
        return self.verdict in ("faster", "slower", "same")

    @property
    def unresolved(self) -> bool:
        """The interval of the ratio is wider than the ratio itself: not a number worth printing."""
        return not (self.ci_high - self.ci_low < self.ratio)


def bootstrap_log_ratios(
    a: Sequence[float], b: Sequence[float], resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> np.ndarray:
    """`resamples` bootstrap replicates of log(median(B) / median(A)), each set resampled flat."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(seed)
    med_x = np.median(x[rng.integers(0, x.size, size=(resamples, x.size))], axis=1)
    med_y = np.median(y[rng.integers(0, y.size, size=(resamples, y.size))], axis=1)
    return np.log(med_y) - np.log(med_x)


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p-value; 1.0 when the sets cannot be told apart at all."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if np.array_equal(np.sort(x), np.sort(y)) or np.ptp(np.concatenate([x, y])) == 0:
        return 1.0
    from scipy import stats as sp_stats  # here, not at import: it costs ~0.6 s on every jitlab command

    return float(sp_stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)


def welch_log_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p of Welch's t on the logs: for instruction counts, which are nearly the same on
    every repeat and few (5 per process). Mann-Whitney's ranks cannot go below p = 0.008 with 5 and
    5, barely under alpha 0.01, and counts that repeat exactly (ties) push its normal approximation
    over it: a 5.0% change with a 95% interval of +5.0% to +5.0% read p = 0.012, "same". With no
    spread on either side the p is 0 for different counts and 1 for equal ones."""
    x, y = np.log(np.asarray(a, dtype=np.float64)), np.log(np.asarray(b, dtype=np.float64))
    var_x = float(x.var(ddof=1)) / x.size if x.size > 1 else 0.0
    var_y = float(y.var(ddof=1)) / y.size if y.size > 1 else 0.0
    difference = float(y.mean() - x.mean())
    if var_x + var_y == 0.0:
        return 0.0 if difference != 0.0 else 1.0
    df = hierarchical.welch_df(var_x, max(x.size - 1, 1), var_y, max(y.size - 1, 1))
    return hierarchical.t_two_sided_p(difference / math.sqrt(var_x + var_y), df)


def compare_samples(
    a: Sequence[float],
    b: Sequence[float],
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    process_a: Sequence[int] | None = None,
    process_b: Sequence[int] | None = None,
    threshold: float | None = None,
) -> SampleComparison:
    """Compare the samples of B with those of A (the baseline). `process_a`/`process_b` give the
    worker process of each sample; `threshold` (a fraction, 0.05 for 5%) replaces the noise floor."""
    return compare_with_replicates(a, b, alpha, confidence, resamples, seed, process_a, process_b, threshold)[
        0
    ]


def compare_with_replicates(
    a: Sequence[float],
    b: Sequence[float],
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    process_a: Sequence[int] | None = None,
    process_b: Sequence[int] | None = None,
    threshold: float | None = None,
    fast: bool = False,
    basis: str = "wall time",
) -> tuple[SampleComparison, np.ndarray]:
    """`compare_samples` plus replicates of the log ratio whose spread matches the interval (for
    the joint intervals of geometric means). `fast`: either side comes from a `--fast` run, whose
    noise floor is taken as at least `FAST_NOISE_FLOOR` (an explicit threshold still decides).
    `basis`: what the samples are ("instructions" gets `INSTRUCTION_FLOOR` instead of time's floors)."""
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both sample sets must be non-empty")
    if min(a) <= 0 or min(b) <= 0:
        raise ValueError("samples must be positive")
    groups_a = hierarchical.group_samples(a, process_a)
    groups_b = hierarchical.group_samples(b, process_b)
    ratio = float(np.median(b) / np.median(a))
    if len(groups_a) >= 2 or len(groups_b) >= 2:
        low, high, p, logs = _between_processes(groups_a, groups_b, ratio, confidence, resamples, seed)
    else:
        logs = bootstrap_log_ratios(a, b, resamples, seed)
        tail = (1.0 - confidence) / 2 * 100
        low, high = (float(v) for v in np.exp(np.percentile(logs, [tail, 100 - tail])))
        p = welch_log_p(a, b) if basis == "instructions" else mann_whitney_p(a, b)
    floor_a, floor_b = hierarchical.noise_floor(groups_a), hierarchical.noise_floor(groups_b)
    if basis == "instructions":
        margin, kind = _instruction_margin(groups_a, groups_b, threshold)
    else:
        margin, kind = _margin(groups_a, groups_b, threshold)
    if fast and threshold is None and margin < FAST_NOISE_FLOOR:
        margin, kind = FAST_NOISE_FLOOR, "noise floor of a --fast run"
    verdict, reason = _verdict(ratio, low, high, p, alpha, margin, kind, len(a), len(b))
    comparison = SampleComparison(
        ratio,
        low,
        high,
        p,
        verdict,
        len(a),
        len(b),
        len(groups_a),
        len(groups_b),
        floor_a,
        floor_b,
        margin,
        kind,
        reason,
        basis,
    )
    return comparison, logs


def paired_verdict(
    change: PairedChange,
    count_a: int,
    count_b: int,
    alpha: float = DEFAULT_ALPHA,
    threshold: float | None = None,
) -> tuple[str, str, float, str]:
    """(verdict, reason, margin, margin kind) of a paired change: it must clear `PAIRED_FLOOR` (or
    the threshold), not the cells' noise floors, which carry the drift the pairing takes out. What
    `compare_paired` reports, and what `jitlab.engine.pairs` asks before it stops taking rounds."""
    margin, kind = (
        (threshold, "threshold") if threshold is not None else (PAIRED_FLOOR, "paired-rounds floor")
    )
    verdict, reason = _verdict(
        change.ratio, change.ci_low, change.ci_high, change.p_value, alpha, margin, kind, count_a, count_b,
        advice=_MORE_ROUNDS, inside_margin="a change this small is not taken as the code's",
    )  # fmt: skip
    if too_wide_for_same(verdict, change.ci_low, change.ci_high, kind):
        verdict = "undecided"
        reason = f"undecided: not significant, but the change's interval reaches beyond ±{SMALL_CHANGE:.0%}: {reason}; {_MORE_ROUNDS}"
    return verdict, f"{reason} (paired over {change.rounds} rounds measured side by side)", margin, kind


def compare_paired(
    change: PairedChange,
    count_a: int,
    count_b: int,
    alpha: float = DEFAULT_ALPHA,
    threshold: float | None = None,
    floors: tuple[float | None, float | None] = (None, None),
    resamples: int = DEFAULT_RESAMPLES,
) -> tuple[SampleComparison, np.ndarray]:
    """B against A when both were measured in the same rounds (`jitlab.stats.paired`), decided by
    `paired_verdict`. `floors`: the cells' own floors, shown."""
    verdict, reason, margin, kind = paired_verdict(change, count_a, count_b, alpha, threshold)
    comparison = SampleComparison(
        change.ratio, change.ci_low, change.ci_high, change.p_value, verdict, count_a, count_b,
        change.rounds, change.rounds, floors[0], floors[1], margin, kind, reason, "paired rounds",
    )  # fmt: skip
    return comparison, paired_replicates(change, DEFAULT_CONFIDENCE, resamples)


def _between_processes(
    groups_a: list[np.ndarray],
    groups_b: list[np.ndarray],
    ratio: float,
    confidence: float,
    resamples: int,
    seed: int,
) -> tuple[float, float, float, np.ndarray]:
    """Interval, p-value and replicates of the log ratio when at least one side has processes
    (`resamples` of them, as many as the one-process path gives, for joint geometric means)."""
    spread_a = hierarchical.spread_of(groups_a, resamples, seed=seed)
    spread_b = hierarchical.spread_of(groups_b, resamples, seed=seed + 1)
    variance = spread_a.variance + spread_b.variance
    df = hierarchical.welch_df(spread_a.variance, spread_a.df, spread_b.variance, spread_b.df)
    log_ratio = math.log(ratio)
    if variance <= 0:  # every sample equal on both sides
        p = 1.0 if log_ratio == 0 else 0.0
        return ratio, ratio, p, np.full(spread_a.log_replicates.size, log_ratio)
    half = hierarchical.t_quantile(0.5 + confidence / 2, df) * math.sqrt(variance)
    p = hierarchical.t_two_sided_p(log_ratio / math.sqrt(variance), df)
    # replicates recentred on the estimate and scaled so their percentile interval is this one
    raw = spread_b.log_replicates - spread_a.log_replicates
    z = hierarchical.t_quantile(0.5 + confidence / 2, math.inf)
    scale = half / (z * float(np.std(raw))) if np.std(raw) > 0 else 0.0
    logs = log_ratio + (raw - raw.mean()) * scale
    return math.exp(log_ratio - half), math.exp(log_ratio + half), p, logs


def segment_floor(samples: np.ndarray) -> float | None:
    """How far the median of a third of one process's samples (in the order they were taken)
    strayed from the median of all: the spread a single process shows over its sampling. None
    with fewer than three samples per third."""
    if samples.size < 3 * _SEGMENT_MIN:
        return None
    median = float(np.median(samples))
    if median <= 0:
        return None
    return max(abs(float(np.median(part)) / median - 1.0) for part in np.array_split(samples, 3))


def side_floor(groups: Sequence[np.ndarray]) -> tuple[float, bool]:
    """(the noise floor of one side, measured between processes?): between its processes when it
    has several, else its segments' spread, never below `ONE_PROCESS_FLOOR`."""
    if len(groups) >= 2:
        return float(hierarchical.noise_floor(groups) or 0.0), True
    segments = segment_floor(groups[0]) if groups else None
    return max(ONE_PROCESS_FLOOR, segments or 0.0), False


def _margin(
    groups_a: Sequence[np.ndarray], groups_b: Sequence[np.ndarray], threshold: float | None
) -> tuple[float, str]:
    if threshold is not None:
        return threshold, "threshold"
    (floor_a, measured_a), (floor_b, measured_b) = side_floor(groups_a), side_floor(groups_b)
    return max(floor_a, floor_b), "noise floor" if measured_a and measured_b else "one-process floor"


def _instruction_margin(
    groups_a: Sequence[np.ndarray], groups_b: Sequence[np.ndarray], threshold: float | None
) -> tuple[float, str]:
    """Counts vary little: the floor between processes (or segments), at least `INSTRUCTION_FLOOR`."""
    if threshold is not None:
        return threshold, "threshold"
    floors = [
        (hierarchical.noise_floor(g) if len(g) >= 2 else segment_floor(g[0]) if g else None) or 0.0
        for g in (groups_a, groups_b)
    ]
    return max(INSTRUCTION_FLOOR, *floors), "instruction floor"


_MEASURE_BETTER = (
    "measure both builds in one run (`jitlab run NEW --against OLD`: side by side in every round, "
    "which takes the machine's drift out), with more processes (`--processes 3..40`), on a quieter "
    "machine, or count instructions (--measure instructions), which the drift does not move"
)


_MORE_ROUNDS = (
    "more rounds narrow the paired interval (`--processes 3..80 --target-ci 1`), as does a quieter machine"
)


def too_wide_for_same(verdict: str, low: float, high: float, margin_kind: str) -> bool:
    """A "same" of two builds measured side by side whose interval reaches past ±`SMALL_CHANGE`
    (unless the user gave a threshold): `undecided` instead, whether the pair was compared on its
    paired rounds (`paired_verdict`: paired intervals are narrow, and one reaching past ±2% says too
    little to call the builds the same) or, with too few quiet rounds, as separate runs
    (`jitlab.compare.paired.compared_apart`: the busy rounds moved each side's time, and a 5% slower
    build read "same" at intervals of about ±5%). One rule, so that a pair reads "same" on the same
    terms whichever way it was compared."""
    return verdict == "same" and margin_kind != "threshold" and not within(low, high, SMALL_CHANGE)


def within(low: float, high: float, span: float) -> bool:
    """The interval [low, high] of a ratio lies within 1 ± span."""
    return 1.0 - span <= low and high <= 1.0 + span


def _pct(ratio: float) -> str:
    return f"{ratio - 1:+.1%}"


def _verdict(
    ratio: float,
    low: float,
    high: float,
    p: float,
    alpha: float,
    margin: float,
    kind: str,
    count_a: int,
    count_b: int,
    advice: str = _MEASURE_BETTER,
    inside_margin: str = "runs of the same code differ as much on this machine",
) -> tuple[str, str]:
    interval = (
        f"[{_pct(low)}, {_pct(high)}]" if high - low < ratio else "(its interval unresolved: too noisy)"
    )
    if count_a < 3 or count_b < 3:
        return "too few samples", f"too few samples: {count_a} and {count_b} (at least 3 on each side)"
    within_span = within(low, high, SAME_SPAN)
    if not p < alpha and not within_span:
        return "undecided", (
            f"undecided: too noisy to tell: p={p:.2g}, change {_pct(ratio)} {interval}, an interval reaching "
            f"beyond ±{SAME_SPAN:.0%}; {advice}"
        )
    if not p < alpha:
        return "same", f"not significant: p={p:.2g} (alpha {alpha:g}), change {_pct(ratio)} {interval}"
    for verdict, outside in (("slower", low > 1.0 + margin), ("faster", high < 1.0 - margin)):
        if outside:
            return verdict, (
                f"called: {verdict} {_pct(ratio)} {interval}, p={p:.2g}, outside {kind} ±{margin:.1%}"
            )
    if not within_span:  # significant, but inside a noise floor too wide to say it is small
        return "undecided", (
            f"undecided: too noisy to tell: change {_pct(ratio)} {interval}, p={p:.2g}, within {kind} "
            f"±{margin:.1%}, an interval reaching beyond ±{SAME_SPAN:.0%}; {advice}"
        )
    if kind != "threshold" and not within(low, high, SMALL_CHANGE):
        return "undecided", (
            f"undecided: a significant change {_pct(ratio)} {interval}, p={p:.2g}, but within {kind} "
            f"±{margin:.1%}: {inside_margin}; {advice}"
        )
    return "same", f"within {kind} ±{margin:.1%}: change {_pct(ratio)} {interval}, p={p:.2g}"


@dataclass(frozen=True)
class GeometricMean:
    """Geometric mean of several ratios, with a CI from the cells' joint bootstrap replicates."""

    ratio: float
    ci_low: float
    ci_high: float
    cells: int


def geometric_mean(
    log_ratio_replicates: Sequence[np.ndarray],
    ratios: Sequence[float],
    confidence: float = DEFAULT_CONFIDENCE,
) -> GeometricMean:
    """Replicate j of the geometric mean is the mean over cells of their j-th log-ratio replicate,
    so the interval carries each cell's own sampling noise."""
    if not ratios:
        raise ValueError("no ratios to summarise")
    point = float(np.exp(np.mean(np.log(ratios))))
    stacked = np.mean(np.vstack(log_ratio_replicates), axis=0)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.exp(np.percentile(stacked, [tail, 100 - tail]))
    return GeometricMean(point, float(low), float(high), len(ratios))
