"""Change-point detection: where does a series of medians step up or down?

PELT (Killick, Fearnhead & Eckley 2012) finds the segmentation minimising the sum of squared
deviations from each segment's mean plus a penalty per change, exactly (dynamic programming over
the last change, with PELT's pruning where it is exact).
The series is of log medians, so a step is a relative change. The penalty per change is
6 log(n) sigma^2, where sigma is the series' noise: the larger of the run-to-run scatter (median
absolute first difference, robust to the steps themselves) and the statistical uncertainty of each
median (from its confidence interval). That is three times the BIC penalty, because sigma is
estimated from the series itself; by simulation it calls a step in about 5% of flat series of 6
to 12 runs, 1% of 25 runs and fewer of longer ones. No fixed threshold on the step size: a 3% step is found in a quiet series, a
20% wobble is not called a step in a noisy one.

A single outlying run (far from the running median of it and its two neighbours) is replaced by
that running median before segmenting: one bad run is not a step, and a step needs `min_size`
consecutive runs at the new level to be called.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: a segment spans at least this many runs, so one outlier run is not taken for two steps
DEFAULT_MIN_SIZE = 2
#: penalty per change in units of log(n) sigma^2 (see the module docstring)
PENALTY_PER_LOG_N = 6.0
#: a run further than this many sigma from its running median of three is an outlier
OUTLIER_SIGMAS = 5.0
#: the smallest noise assumed (in log units: a relative 1e-6), so identical medians make no steps
NOISE_FLOOR = 1e-6
#: z for a 95% interval, to turn CI widths into standard errors
Z95 = 1.959963984540054


def pelt(values: Sequence[float], penalty: float, min_size: int = DEFAULT_MIN_SIZE) -> list[int]:
    """Indices where a new segment begins (each in 1..n-1), by PELT with an L2 cost."""
    y = np.asarray(values, dtype=np.float64)
    n = y.size
    if n < 2 * min_size:
        return []
    y = y - y.mean()  # centred, so the running sums lose no precision
    csum = np.concatenate([[0.0], np.cumsum(y)])
    csum2 = np.concatenate([[0.0], np.cumsum(y * y)])

    def cost(start: int, end: int) -> float:
        length = end - start
        total = csum[end] - csum[start]
        return max(float(csum2[end] - csum2[start] - total * total / length), 0.0)

    best = np.full(n + 1, np.inf)
    best[0] = -penalty
    last_change = np.zeros(n + 1, dtype=int)
    candidates: list[int] = [0]
    for end in range(min_size, n + 1):
        scored = [(best[s] + cost(s, end) + penalty, s) for s in candidates if end - s >= min_size]
        if scored:
            value, start = min(scored)
            best[end] = value
            last_change[end] = start
            if min_size == 1:
                # PELT's pruning: a start that cannot beat the optimum now never will. It is exact
                # only without a minimum segment length; with one, every start is kept (optimal
                # partitioning, quadratic, still instant for the hundreds of runs a history has).
                candidates = [s for s in candidates if best[s] + cost(s, end) <= best[end]]
        if end - min_size + 1 >= min_size:
            candidates.append(end - min_size + 1)
    changes = []
    end = n
    while end > 0:
        start = int(last_change[end])
        if start > 0:
            changes.append(start)
        end = start
    return sorted(changes)


def noise_sigma(log_values: Sequence[float], log_standard_errors: Sequence[float] = ()) -> float:
    """Noise of a log series: run-to-run scatter or the medians' own uncertainty, whichever is larger."""
    y = np.asarray(log_values, dtype=np.float64)
    scatter = 0.0
    if y.size >= 3:
        diffs = np.abs(np.diff(y))
        scatter = 1.4826 * float(np.median(diffs)) / math.sqrt(2.0)
    own = float(np.median(log_standard_errors)) if len(log_standard_errors) else 0.0
    return max(scatter, own, NOISE_FLOOR)


def detect_steps(
    medians: Sequence[float],
    ci_lows: Sequence[float] | None = None,
    ci_highs: Sequence[float] | None = None,
    penalty_scale: float = 1.0,
    min_size: int = DEFAULT_MIN_SIZE,
) -> list[int]:
    """Indices of the runs where a step change of the medians begins."""
    y = np.log(np.asarray(medians, dtype=np.float64))
    n = y.size
    if n < 2 * min_size:
        return []
    errors: list[float] = []
    if ci_lows is not None and ci_highs is not None:
        for low, high in zip(ci_lows, ci_highs):
            if low and high and low > 0 and high > low:
                errors.append((math.log(high) - math.log(low)) / (2 * Z95))
    sigma = noise_sigma(y, errors)
    penalty = penalty_scale * PENALTY_PER_LOG_N * math.log(n) * sigma * sigma
    return pelt(replace_outliers(y, sigma), penalty, min_size)


def running_median3(y: np.ndarray) -> np.ndarray:
    """Median of each point and its two neighbours (of the first or last three at the ends)."""
    if y.size < 3:
        return y.copy()
    inner = np.median(np.lib.stride_tricks.sliding_window_view(y, 3), axis=1)
    return np.concatenate([[np.median(y[:3])], inner, [np.median(y[-3:])]])


def replace_outliers(y: np.ndarray, sigma: float) -> np.ndarray:
    """Isolated runs further than OUTLIER_SIGMAS sigma from their running median, replaced by it."""
    med = running_median3(y)
    return np.where(np.abs(y - med) > OUTLIER_SIGMAS * sigma, med, y)
