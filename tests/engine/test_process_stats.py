"""The statistics of cells measured in several worker processes, against synthetic data with a known
answer: samples whose processes are offset from each other (between-process variance), as real
processes are."""

import math

import numpy as np
import pytest

from jitlab.stats.hierarchical import (
    group_samples,
    hierarchical_replicates,
    median_spread,
    noise_floor,
    within_process_variance,
)
from jitlab.stats.summary import median_ci, summarize


def processes(rng, count, per_process, between, within, median=1.0):
    """`count` processes whose log medians scatter by `between`, each with `per_process` samples
    scattering by `within` around it. The true median of the cell is `median`."""
    offsets = rng.normal(0.0, between, count)
    return [median * np.exp(o + rng.normal(0.0, within, per_process)) for o in offsets]


def coverage(count, between, within, trials, seed, per_process=40):
    """Share of simulated cells whose hierarchical 95% CI holds the true median (1.0), and the
    share for the flat interval computed as if all samples were independent."""
    rng = np.random.default_rng(seed)
    hierarchical = flat = 0
    for _ in range(trials):
        groups = processes(rng, count, per_process, between, within)
        low, high = median_spread(groups, resamples=400, seed=int(rng.integers(2**31))).interval()
        hierarchical += low <= 1.0 <= high
        flat_low, flat_high = median_ci(np.concatenate(groups))
        flat += flat_low <= 1.0 <= flat_high
    return hierarchical / trials, flat / trials


@pytest.mark.parametrize("count", [3, 5])
def test_hierarchical_ci_covers_the_true_median_where_the_flat_one_does_not(count):
    """Between-process spread 1%, within 0.5%: the processes decide the uncertainty."""
    hierarchical, flat = coverage(count, between=0.01, within=0.005, trials=300, seed=count)
    assert 0.91 <= hierarchical <= 0.995
    assert flat < 0.5  # pooled as independent samples, the interval is far too narrow


def test_hierarchical_ci_still_covers_when_the_noise_is_within_processes():
    hierarchical, flat = coverage(3, between=0.0, within=0.02, trials=200, seed=11)
    assert hierarchical >= 0.93
    assert flat >= 0.9  # here the flat interval is right too: there is nothing between processes


def test_replicates_are_pooled_medians_of_resampled_processes():
    """Each replicate is the median of some multiset of the samples, and with one sample per process
    and identical processes the replicates are exactly the medians of resampled process values."""
    groups = [np.array([1.0]), np.array([2.0]), np.array([4.0])]
    replicates = hierarchical_replicates(groups, resamples=3000, seed=0)
    # medians of 3 values drawn from {1, 2, 4}: always one of them
    assert set(np.unique(replicates)) <= {1.0, 2.0, 4.0}
    # P(median = 1) = P(at least two of three draws are 1) = 7/27
    assert np.mean(replicates == 1.0) == pytest.approx(7 / 27, abs=0.03)


def test_bootstrap_is_reproducible_and_vectorised_over_unequal_processes():
    rng = np.random.default_rng(3)
    groups = [rng.lognormal(0, 0.1, n) for n in (5, 50, 500)]
    a = hierarchical_replicates(groups, resamples=200, seed=9)
    b = hierarchical_replicates(groups, resamples=200, seed=9)
    assert np.array_equal(a, b)
    pooled = np.concatenate(groups)
    assert pooled.min() <= a.min() and a.max() <= pooled.max()


def test_within_process_variance_matches_theory_for_normal_samples():
    """The variance of the median of n normal samples is about pi sigma^2 / (2 n)."""
    rng = np.random.default_rng(4)
    sigma, n = 0.01, 400
    groups = [np.exp(rng.normal(0, sigma, n)) for _ in range(3)]
    expected = math.pi * sigma**2 / (2 * n)
    assert within_process_variance(groups, resamples=2000) == pytest.approx(expected, rel=0.35)


def test_noise_floor_is_the_largest_process_deviation():
    groups = [np.full(10, 1.0), np.full(10, 1.02), np.full(11, 0.99)]
    assert noise_floor(groups) == pytest.approx(0.02)
    assert noise_floor(groups[:1]) is None


def test_group_samples_by_process_index():
    groups = group_samples([1.0, 2.0, 3.0, 4.0], [0, 1, 0, 1])
    assert [list(g) for g in groups] == [[1.0, 3.0], [2.0, 4.0]]
    assert [list(g) for g in group_samples([1.0, 2.0], None)] == [[1.0, 2.0]]
    with pytest.raises(ValueError):
        group_samples([1.0, 2.0], [0])


def test_summary_of_a_multi_process_cell_carries_processes_and_noise_floor():
    rng = np.random.default_rng(5)
    groups = processes(rng, 3, 30, between=0.02, within=0.002)
    samples = np.concatenate(groups)
    index = np.repeat([0, 1, 2], 30)
    s = summarize(samples, sample_process=index)
    assert s.processes == 3
    assert s.noise_floor == pytest.approx(noise_floor(groups))
    assert s.ci_low < s.median < s.ci_high
    one = summarize(samples)  # the same samples as if from one process
    assert one.processes == 1 and one.noise_floor is None
    assert (s.ci_high - s.ci_low) > 3 * (one.ci_high - one.ci_low)
