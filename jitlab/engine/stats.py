"""Summary statistics of timing samples, computed from the raw samples whenever needed.

The confidence interval of the median is distribution-free (order statistics of a binomial), so it
holds for the skewed, heavy-tailed distributions timings have.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# scipy.special, not scipy.stats: the latter takes over a second to import in every worker
from scipy.special import bdtr

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
    every sample."""
    cdf = bdtr(np.arange(n), n, 0.5)
    return int(np.count_nonzero(cdf <= (1.0 - confidence) / 2))


@dataclass(frozen=True)
class Summary:
    median: float
    ci_low: float
    ci_high: float
    iqr: float
    minimum: float
    count: int

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


def summarize(samples: Sequence[float], confidence: float = 0.95) -> Summary:
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        nan = float("nan")
        return Summary(nan, nan, nan, nan, nan, 0)
    q1, median, q3 = np.percentile(x, [25, 50, 75])
    low, high = median_ci(x, confidence)
    return Summary(float(median), low, high, float(q3 - q1), float(x.min()), int(x.size))


def rms(values: Sequence[float]) -> float:
    v = np.asarray(values, dtype=np.float64)
    return float(np.sqrt(np.mean(v * v))) if v.size else float("nan")
