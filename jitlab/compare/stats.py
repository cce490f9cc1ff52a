"""Is B slower or faster than A? Statistics on two sets of raw timing samples.

The effect is the ratio of medians B/A (above 1: B is slower). Its confidence interval comes from a
percentile bootstrap that resamples each set with replacement, so no distribution is assumed (timings
are skewed and heavy-tailed). Significance comes from the two-sided Mann-Whitney U test. A change is
called only when both agree: the test rejects at `alpha` *and* the interval excludes 1. Two identical
sample sets give p = 1 and ratio 1 and are never called different.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: significance level of the Mann-Whitney U test
DEFAULT_ALPHA = 0.01
#: bootstrap replicates for the CI of the ratio of medians
DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class SampleComparison:
    """B against A: ratio of medians (B/A) with its CI, the test's p-value, and the verdict."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str  # faster | slower | same | too few samples
    count_a: int
    count_b: int

    @property
    def change(self) -> float:
        """Relative change of the median: +0.10 means B takes 10% longer than A."""
        return self.ratio - 1.0

    @property
    def significant(self) -> bool:
        return self.verdict in ("faster", "slower")


def bootstrap_log_ratios(
    a: Sequence[float], b: Sequence[float], resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> np.ndarray:
    """`resamples` bootstrap replicates of log(median(B) / median(A))."""
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


def compare_samples(
    a: Sequence[float],
    b: Sequence[float],
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> SampleComparison:
    """Compare the samples of B with those of A (the baseline)."""
    return compare_with_replicates(a, b, alpha, confidence, resamples, seed)[0]


def compare_with_replicates(
    a: Sequence[float],
    b: Sequence[float],
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[SampleComparison, np.ndarray]:
    """`compare_samples` plus the bootstrap replicates of the log ratio (for geometric means)."""
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both sample sets must be non-empty")
    if min(a) <= 0 or min(b) <= 0:
        raise ValueError("timing samples must be positive")
    ratio = float(np.median(b) / np.median(a))
    logs = bootstrap_log_ratios(a, b, resamples, seed)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.exp(np.percentile(logs, [tail, 100 - tail]))
    p = mann_whitney_p(a, b)
    if len(a) < 3 or len(b) < 3:
        verdict = "too few samples"
    elif p < alpha and low > 1.0:
        verdict = "slower"
    elif p < alpha and high < 1.0:
        verdict = "faster"
    else:
        verdict = "same"
    return SampleComparison(ratio, float(low), float(high), p, verdict, len(a), len(b)), logs


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
