"""The statistics of `jitlab compare` against cases with a known answer."""

import numpy as np
import pytest

from jitlab.stats.comparison import compare_samples, compare_with_replicates, geometric_mean


def lognormal(median, spread, n, seed):
    return np.random.default_rng(seed).lognormal(np.log(median), spread, n)


@pytest.mark.parametrize("n", [3, 10, 50, 400])
@pytest.mark.parametrize("seed", range(5))
def test_identical_sample_sets_are_never_called_different(n, seed):
    a = lognormal(1e-3, 0.2, n, seed)
    for b in (a.copy(), a[::-1].copy(), np.random.default_rng(seed).permutation(a)):
        result = compare_samples(a, b)
        # never called different; "same" only where the interval is narrow enough to say so
        assert result.verdict in ("same", "undecided")
        assert result.p_value == 1.0
        assert result.ratio == pytest.approx(1.0)
        assert result.ci_low <= 1.0 <= result.ci_high


def test_constant_samples_are_the_same():
    result = compare_samples([2e-3] * 20, [2e-3] * 20)
    assert result.verdict == "same" and result.ratio == 1.0 and result.ci_low == result.ci_high == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_a_ten_percent_shift_with_enough_samples_is_found(seed):
    a = lognormal(1e-3, 0.03, 60, seed)
    b = lognormal(1.1e-3, 0.03, 60, seed + 100)
    slower = compare_samples(a, b)
    assert slower.verdict == "slower"
    assert slower.p_value < 1e-6
    assert slower.ci_low < 1.10 < slower.ci_high
    assert slower.ratio == pytest.approx(1.10, rel=0.03)
    faster = compare_samples(b, a)
    assert faster.verdict == "faster"
    assert faster.ratio == pytest.approx(1 / slower.ratio)


def test_the_same_shift_with_too_much_noise_is_not_called_but_undecided():
    a = lognormal(1e-3, 0.5, 8, 1)
    b = lognormal(1.1e-3, 0.5, 8, 2)
    result = compare_samples(a, b)
    assert result.verdict == "undecided" and result.reason.startswith("undecided: too noisy to tell")


def test_false_positive_rate_stays_near_alpha():
    rng = np.random.default_rng(7)
    calls = sum(
        compare_samples(rng.lognormal(0, 0.1, 30), rng.lognormal(0, 0.1, 30), resamples=300).significant
        for _ in range(200)
    )
    assert calls <= 8  # alpha = 0.01: about 2 expected out of 200


def test_too_few_samples_are_never_called():
    result = compare_samples([1.0, 1.01], [2.0, 2.02])
    assert result.verdict == "too few samples"
    assert result.ratio == pytest.approx(2.0)


def test_bad_samples_are_rejected():
    with pytest.raises(ValueError):
        compare_samples([], [1.0])
    with pytest.raises(ValueError):
        compare_samples([0.0, 1.0], [1.0, 2.0])


def test_bootstrap_is_reproducible():
    a, b = lognormal(1, 0.1, 30, 1), lognormal(1.05, 0.1, 30, 2)
    assert compare_samples(a, b) == compare_samples(a, b)


def test_geometric_mean_of_opposite_changes_is_one():
    a = lognormal(1e-3, 0.02, 50, 3)
    up, logs_up = compare_with_replicates(a, a * 1.25)
    down, logs_down = compare_with_replicates(a, a / 1.25)
    g = geometric_mean([logs_up, logs_down], [up.ratio, down.ratio])
    assert g.ratio == pytest.approx(1.0)
    assert g.ci_low <= 1.0 <= g.ci_high
    assert g.cells == 2
    single = geometric_mean([logs_up], [up.ratio])
    assert single.ratio == pytest.approx(1.25) and single.ci_low > 1.0
