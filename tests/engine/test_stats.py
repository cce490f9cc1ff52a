"""The statistics behind every reported figure, against cases worked out by hand."""

import numpy as np
import pytest
from scipy import stats

from jitlab.stats.summary import median_ci, rms, summarize


def test_median_ci_uses_order_statistics_of_the_binomial():
    # n = 10: P(B(10, 1/2) <= 1) = 0.0107 <= 0.025 < P(B <= 2), so the CI is [x(2), x(9)]
    samples = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5]
    assert median_ci(samples) == (2.0, 9.0)


def test_median_ci_with_too_few_samples_is_the_whole_range():
    assert median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)


def test_median_ci_covers_the_true_median_at_least_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    true_median = stats.lognorm(s=0.5).median()
    hits = 0
    trials = 2000
    for _ in range(trials):
        low, high = median_ci(rng.lognormal(sigma=0.5, size=30))
        hits += low <= true_median <= high
    assert hits / trials >= 0.94


def test_summary_fields():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median == 3.0
    assert s.minimum == 1.0
    assert s.iqr == pytest.approx(2.0)
    assert s.count == 5
    assert s.unstable  # IQR is 67% of the median


def test_rms():
    assert rms([3.0, 4.0]) == pytest.approx(np.sqrt(12.5))
