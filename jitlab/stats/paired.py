"""Two builds measured in the same rounds: the change from paired per-round ratios.

A run measured with `jitlab run NEW --against OLD` measures process k of every cell of both builds in
round k, side by side (`jitlab.engine.rounds`). The machine's speed drifts over minutes (up to 3.5%
between identical runs of 3 to 40 processes on the 2-core VM), which hides a 5% change between
separate runs; within one round both builds meet about the same speed. So the change is the
trimmed geometric mean over rounds of median(B, round k) / median(A, round k), and its interval and
p-value come from Yuen's trimmed-mean t over those per-round log ratios (`log_interval`): what
separates two processes of the same code (memory layout, a busy moment) is in their spread, and the
drift between rounds is not.

Why trimmed: a round's ratio is now and then far off (one process of the round slowed by 30% to 60%
by a moment of other work the load checks did not see). On the quiet VM the per-round log ratios of
20 side-by-side pairs had a kurtosis up to 19 and extremes of ±0.6 beside a robust spread of 0.05
(`benchmarks/loaded_verdicts.py wall-paired`), so the plain mean's interval was three times as wide
as the typical round allows, and a 5% slower build ended "undecided" after 80 rounds. The 20%
trimmed mean ignores such rounds. For two identical builds the per-round log ratio is symmetric
about 0 (the order within a round is random), so the test keeps its error rate.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from jitlab.stats import hierarchical

#: the smallest number of rounds both builds were measured in for a paired comparison
MIN_PAIRED_ROUNDS = 3
#: the margin a paired change must clear: the drift between rounds cancels, but two processes of a
#: round are still a few seconds apart and the order within a round is random, so a change under
#: this is not taken as the code's
PAIRED_FLOOR = 0.01


@dataclass(frozen=True)
class PairedChange:
    """B against A from their common rounds: the ratio (above 1, B is slower), its interval, p."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    rounds: int
    #: the per-round log ratios, for replicates and the record
    log_ratios: tuple[float, ...]

    @property
    def half_width(self) -> float:
        """Half the interval's width, as a fraction of the ratio (what `--target-ci` is checked on)."""
        return (self.ci_high - self.ci_low) / (2.0 * self.ratio)


def common_rounds(a: Mapping[int, float], b: Mapping[int, float]) -> list[int]:
    """The rounds both sides have a positive figure for, in order."""
    return sorted(k for k in set(a) & set(b) if a[k] > 0 and b[k] > 0)


def paired_change(
    a: Mapping[int, float], b: Mapping[int, float], confidence: float = 0.95
) -> PairedChange | None:
    """The change from B's and A's figure per round ({round: median}); None with fewer than
    `MIN_PAIRED_ROUNDS` rounds in common."""
    rounds = common_rounds(a, b)
    if len(rounds) < MIN_PAIRED_ROUNDS:
        return None
    logs = np.log([b[k] / a[k] for k in rounds])
    mean, half, p = log_interval(logs, confidence)
    return PairedChange(
        math.exp(mean),
        math.exp(mean - half),
        math.exp(mean + half),
        p,
        len(rounds),
        tuple(float(v) for v in logs),
    )


#: the share of rounds trimmed from each end for the per-round mean (Wilcox's usual 20%)
TRIM = 0.2
#: the fewest rounds of which `TRIM` cuts one from each end; fewer are read untrimmed
FIRST_TRIMMED_ROUNDS = math.ceil(1 / TRIM)


@dataclass(frozen=True)
class TrimmedRounds:
    """Per-round log ratios seen as Yuen's trimmed mean sees them: the mean of the middle rounds
    (`TRIM` cut from each end; none with fewer than `FIRST_TRIMMED_ROUNDS`), the spread of the winsorized rounds
    (the cut ones set to the nearest kept one), and how many were kept. The interval of a paired
    change and the busy-machine forecast of the rounds a pair needs (`jitlab.stats.quiet_rounds`)
    read the rounds the same way, so one far round neither widens the one nor inflates the other."""

    mean: float
    winsorized_spread: float
    rounds: int
    kept: int

    @classmethod
    def of(cls, logs: Sequence[float] | np.ndarray) -> TrimmedRounds:
        values = np.sort(np.asarray(logs, dtype=np.float64))
        n = len(values)
        cut = int(TRIM * n)
        winsorized = np.clip(values, values[cut], values[n - cut - 1])
        return cls(float(values[cut : n - cut].mean()), float(winsorized.std(ddof=1)), n, n - 2 * cut)

    def standard_error(self) -> float:
        """The trimmed mean's standard error (Yuen's: from the winsorized spread)."""
        return self.winsorized_spread * math.sqrt((self.rounds - 1) / (self.kept * (self.kept - 1)))

    def interval(self, confidence: float = 0.95) -> tuple[float, float, float]:
        """(trimmed mean, half width of its interval, two-sided p of "no change") by Yuen's
        trimmed-mean t: h - 1 degrees of freedom for the h rounds kept (Student's t on the mean
        where nothing was trimmed)."""
        if self.winsorized_spread == 0.0:
            return self.mean, 0.0, 1.0 if self.mean == 0.0 else 0.0
        error = self.standard_error()
        df = self.kept - 1
        return (
            self.mean,
            hierarchical.t_quantile(0.5 + confidence / 2, df) * error,
            hierarchical.t_two_sided_p(self.mean / error, df),
        )


def log_interval(logs: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """(trimmed mean, half width of its interval, two-sided p of "no change") of per-round log
    ratios (at least two): `TrimmedRounds.interval` of them."""
    return TrimmedRounds.of(logs).interval(confidence)


def paired_replicates(change: PairedChange, confidence: float, resamples: int, seed: int = 0) -> np.ndarray:
    """Replicates of the log ratio whose percentile interval is the paired one (for the joint
    intervals of geometric means over cells)."""
    log_ratio = math.log(change.ratio)
    z = hierarchical.t_quantile(0.5 + confidence / 2, math.inf)
    scale = (math.log(change.ci_high) - log_ratio) / z
    # seeded by the cell's own ratios: the same store gives the same replicates, and two cells get
    # independent ones (one seed for every cell would make a geometric mean's cells move together)
    own = zlib.crc32(np.asarray(change.log_ratios, dtype=np.float64).tobytes()) + seed
    return log_ratio + scale * np.random.default_rng(own).standard_normal(resamples)
