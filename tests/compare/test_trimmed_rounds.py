"""The trimmed reading of a pair's rounds (jitlab.stats.paired.TrimmedRounds)."""

from __future__ import annotations

import numpy as np

from jitlab.stats import paired


def test_trimming_starts_at_first_trimmed_rounds() -> None:
    """The busy-machine forecast assumes no round is cut below FIRST_TRIMMED_ROUNDS and one from
    each end from there: the constant must say what `TrimmedRounds.of` does."""
    first = paired.FIRST_TRIMMED_ROUNDS
    below = paired.TrimmedRounds.of(np.arange(first - 1, dtype=float))
    at = paired.TrimmedRounds.of(np.arange(first, dtype=float))
    assert (below.kept, below.rounds) == (first - 1, first - 1)
    assert (at.kept, at.rounds) == (first - 2, first)


def test_log_interval_is_the_trimmed_interval() -> None:
    logs = np.log([1.01, 0.99, 1.03, 1.40, 1.02, 0.98, 1.00, 1.01])
    mean, half, p = paired.log_interval(logs)
    trimmed = paired.TrimmedRounds.of(logs)
    assert (mean, half, p) == trimmed.interval()
    assert mean == trimmed.mean and half > 0 and 0 < p < 1
    # the far round (1.40) is cut: the mean is that of the middle rounds
    assert abs(mean - np.sort(logs)[1:-1].mean()) < 1e-12
