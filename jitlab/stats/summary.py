"""Summary statistics of timing samples, computed from the raw samples whenever needed.

For samples of one process the confidence interval of the median is distribution-free (order
statistics of a binomial), so it holds for the skewed, heavy-tailed distributions timings have. For
samples from several worker processes it comes from the hierarchical bootstrap of
`jitlab.stats.hierarchical`, which counts the variation between processes, and the summary
carries the cell's noise floor.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from jitlab.stats import hierarchical

#: IQR / median above which a cell is flagged as unstable
UNSTABLE_SPREAD = 0.10


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Confidence interval of the median from order statistics.

    The k-th smallest and k-th largest samples bracket the median with probability
    1 - 2 P(Binomial(n, 1/2) < k). With fewer than 6 samples no such k exists at 95% and the
    interval is the whole range (reported, and flagged by `Summary.ci_half_width`).
    """
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = len(x)
    if n == 0:
        return (float("nan"), float("nan"))
    k = _order_statistic(n, confidence)
    if k < 1:
        return (float(x[0]), float(x[-1]))
    return (float(x[k - 1]), float(x[n - k]))


@functools.lru_cache(maxsize=4096)
def _order_statistic(n: int, confidence: float) -> int:
    """k such that the k-th smallest and largest of n samples bracket the median: the number of j
    with P(Binomial(n, 1/2) <= j) <= (1 - confidence) / 2. Cached: the sampling loop asks after
    every sample.

    Exact integer arithmetic (the CDF is a sum of binomial coefficients over 2^n) rather than
    scipy.special: importing scipy costs a quarter of a second in every worker process, and a cell
    now starts several of them."""
    tail = Fraction((1.0 - confidence) / 2)
    limit = tail.numerator << n  # P(B <= j) > tail  <=>  cumulative * denominator > numerator * 2^n
    coefficient = 1  # C(n, j), updated in place
    cumulative = 0
    for j in range(n):
        cumulative += coefficient
        if cumulative * tail.denominator > limit:
            return j
        coefficient = coefficient * (n - j) // (j + 1)
    return n


@dataclass(frozen=True)
class Summary:
    median: float
    ci_low: float
    ci_high: float
    iqr: float
    minimum: float
    count: int
    #: worker processes the samples came from
    processes: int = 1
    #: largest deviation of one process's median from the median (None: one process)
    noise_floor: float | None = None

    @property
    def ci_half_width(self) -> float:
        """Half the CI's width relative to the median (0.02 means ±2%)."""
        if not self.median:
            return float("inf")
        return max(self.median - self.ci_low, self.ci_high - self.median) / self.median

    @property
    def spread(self) -> float:
        return self.iqr / self.median if self.median else float("inf")

    @property
    def unstable(self) -> bool:
        return self.spread > UNSTABLE_SPREAD


def summarize(
    samples: Sequence[float], confidence: float = 0.95, sample_process: Sequence[int] | None = None
) -> Summary:
    """Median, CI, IQR, minimum and count; with `sample_process` (the worker process of each sample)
    and at least two processes, the CI of the hierarchical bootstrap and the noise floor."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        nan = float("nan")
        return Summary(nan, nan, nan, nan, nan, 0)
    q1, median, q3 = np.percentile(x, [25, 50, 75])
    groups = hierarchical.group_samples(x, sample_process)
    if len(groups) < 2 or min(x) <= 0:
        low, high = median_ci(x, confidence)
        return Summary(float(median), low, high, float(q3 - q1), float(x.min()), int(x.size))
    low, high = hierarchical.median_spread(groups).interval(confidence)
    return Summary(
        float(median),
        low,
        high,
        float(q3 - q1),
        float(x.min()),
        int(x.size),
        processes=len(groups),
        noise_floor=hierarchical.noise_floor(groups),
    )


def rms(values: Sequence[float]) -> float:
    v = np.asarray(values, dtype=np.float64)
    return float(np.sqrt(np.mean(v * v))) if v.size else float("nan")
