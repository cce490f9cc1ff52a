"""Statistics of a cell measured in several worker processes: the hierarchical bootstrap of the
median, its confidence interval, and the noise floor.

Samples taken in one process share that process's memory layout, code placement, allocator state
and the machine's mood while it ran, so they are not independent draws of the cell's time: two
processes of the same code differ by more than the samples within each would suggest. A confidence
interval computed from pooled samples as if they were independent is far too narrow (in simulation
with a between-process spread of 1% it covers the true median 30% of the time instead of 95%), and
two identical runs are then called different. So:

- the median's sampling distribution comes from a *hierarchical* bootstrap: pick processes with
  replacement, then samples with replacement within each picked process, and take the median of the
  pooled picks;
- with few processes the plain percentile interval of those replicates is still too narrow (the
  process level has only P values) and counts the within-process noise twice (once in each
  process's observed median, once in the resampling). The variance is corrected for both, with the
  within-process part estimated by resampling each process alone, and the interval uses Student's t
  with P - 1 degrees of freedom. By simulation (tests/engine/test_process_stats.py) it covers the
  true median in about 95% of cases whether the spread is between or within processes;
- the *noise floor* of a cell is how far one process's median strayed from the cell's median: the
  smallest change two runs of the cell can be trusted to show.

Everything is computed in log space (timings are positive and skewed; ratios become differences).
A cell measured in one process (and every cell stored before processes existed) has no noise floor
and keeps the distribution-free interval of `jitlab.stats.summary.median_ci`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: bootstrap replicates; seeded, so the same samples always give the same interval. Only the
#: replicates' variance is used (not their extreme percentiles), which 1000 estimate within ~5%.
DEFAULT_RESAMPLES = 1000
#: largest array the vectorised bootstrap builds at once (elements), to bound memory
_CHUNK_ELEMENTS = 2_000_000


def group_samples(samples: Sequence[float], sample_process: Sequence[int] | None) -> list[np.ndarray]:
    """The samples of each process, in process order. Without process indices (a cell stored before
    processes existed, or measured in one process) all samples form one group."""
    x = np.asarray(samples, dtype=np.float64)
    if sample_process is None or len(sample_process) == 0:
        return [x] if x.size else []
    index = np.asarray(sample_process)
    if index.shape != x.shape:
        raise ValueError(f"{x.size} samples but {index.size} process indices")
    return [x[index == p] for p in np.unique(index)]


def process_medians(groups: Sequence[np.ndarray]) -> np.ndarray:
    return np.array([float(np.median(g)) for g in groups])


def noise_floor(groups: Sequence[np.ndarray]) -> float | None:
    """Largest relative deviation of one process's median from the median of all samples (0.008
    means a process strayed 0.8%). None with fewer than two processes: nothing to compare."""
    if len(groups) < 2:
        return None
    pooled = float(np.median(np.concatenate(groups)))
    if pooled <= 0:
        return None
    return float(np.max(np.abs(process_medians(groups) / pooled - 1.0)))


class _Resampler:
    """Bootstrap medians without sorting: all samples are sorted once, a resample is a count per
    sorted sample (how often it was drawn), and its median is where the running count passes half.
    Linear in the number of draws, so thousands of replicates of thousands of samples take
    milliseconds."""

    def __init__(self, groups: Sequence[np.ndarray]) -> None:
        self.counts = np.array([len(g) for g in groups])
        pooled = np.concatenate([np.sort(g) for g in groups])
        order = np.argsort(pooled, kind="stable")
        self.values = pooled[order]
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        # position in the pooled sorted order of the i-th smallest sample of process p (-1: padding)
        self.position = np.full((len(groups), int(self.counts.max())), -1)
        offsets = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        for p, (offset, n) in enumerate(zip(offsets, self.counts)):
            self.position[p, :n] = rank[offset : offset + n]

    def medians(self, picked: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Median of each row's resample: row r draws counts[picked[r, j]] samples with replacement
        from process picked[r, j], for every j."""
        rows, slots = picked.shape
        width = self.position.shape[1]
        n = self.counts[picked]  # (rows, slots)
        within = (rng.random((rows, slots, width)) * n[..., None]).astype(np.int64)
        where = self.position[picked[..., None], within]
        where[np.arange(width) >= n[..., None]] = self.values.size  # padding goes to a spare bin
        bins = self.values.size + 1
        flat = (np.arange(rows)[:, None, None] * bins + where).ravel()
        drawn = np.bincount(flat, minlength=rows * bins).reshape(rows, bins)[:, :-1]
        running = np.cumsum(drawn, axis=1)
        total = n.sum(axis=1)
        low = np.argmax(running > ((total - 1) // 2)[:, None], axis=1)
        high = np.argmax(running > (total // 2)[:, None], axis=1)
        return 0.5 * (self.values[low] + self.values[high])


def _chunks(total: int, per_row: int) -> list[tuple[int, int]]:
    size = max(1, _CHUNK_ELEMENTS // max(per_row, 1))
    return [(start, min(size, total - start)) for start in range(0, total, size)]


def hierarchical_replicates(
    groups: Sequence[np.ndarray], resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> np.ndarray:
    """Bootstrap replicates of the pooled median: P processes drawn with replacement, then, for each
    drawn process, as many samples as it has, drawn with replacement from it."""
    resampler = _Resampler(groups)
    processes = len(groups)
    rng = np.random.default_rng(seed)
    out = np.empty(resamples)
    for start, rows in _chunks(resamples, processes * (resampler.position.shape[1] + resampler.values.size)):
        picked = rng.integers(0, processes, size=(rows, processes))
        out[start : start + rows] = resampler.medians(picked, rng)
    return out


def within_process_variance(
    groups: Sequence[np.ndarray], resamples: int = DEFAULT_RESAMPLES, seed: int = 1
) -> float:
    """Mean over processes of the bootstrap variance of each process's log median: the part of the
    hierarchical bootstrap's spread that comes from sampling within processes."""
    rng = np.random.default_rng(seed)
    variances = []
    for g in groups:
        resampler = _Resampler([g])
        logs = np.concatenate(
            [
                np.log(resampler.medians(np.zeros((rows, 1), dtype=np.int64), rng))
                for _, rows in _chunks(resamples, 2 * g.size + 1)
            ]
        )
        variances.append(float(np.var(logs)))
    return float(np.mean(variances))


@dataclass(frozen=True)
class MedianSpread:
    """The sampling uncertainty of a multi-process cell's median, in log space."""

    log_median: float
    #: corrected variance of the log median
    variance: float
    #: degrees of freedom of the interval: processes - 1 (infinite for one process: its variance is
    #: the within-process bootstrap's, known as well as its many samples make it)
    df: float
    processes: int
    #: raw hierarchical replicates of the log median (for joint intervals such as geometric means)
    log_replicates: np.ndarray

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        half = t_quantile(0.5 + confidence / 2, self.df) * math.sqrt(self.variance)
        return math.exp(self.log_median - half), math.exp(self.log_median + half)


def median_spread(
    groups: Sequence[np.ndarray], resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> MedianSpread:
    """Hierarchical bootstrap of the pooled median with the variance corrected for few processes.

    With P processes the bootstrap variance of the process level is (P-1)/P of the true one, and the
    within-process variance w enters twice. Expected bootstrap variance: V (P-1)/P + w/P, where V is
    the variance of the median we want; so V = P/(P-1) (bootstrap variance - w/P), never less than
    the within-process part alone."""
    if len(groups) < 2:
        raise ValueError("the hierarchical bootstrap needs at least two processes")
    processes = len(groups)
    pooled = float(np.median(np.concatenate(groups)))
    logs = np.log(hierarchical_replicates(groups, resamples, seed))
    within = within_process_variance(groups, max(resamples // 2, 100), seed + 1) / processes
    variance = max((float(np.var(logs)) - within) * processes / (processes - 1), within)
    return MedianSpread(math.log(pooled), variance, processes - 1, processes, logs)


def single_process_spread(
    samples: np.ndarray, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> MedianSpread:
    """The plain bootstrap of one process's median, in the same form as `median_spread`, for
    comparing a one-process cell (e.g. stored before processes existed) with a multi-process one.
    It knows nothing of the variation between processes."""
    logs = np.log(hierarchical_replicates([np.asarray(samples, dtype=np.float64)], resamples, seed))
    return MedianSpread(math.log(float(np.median(samples))), float(np.var(logs)), math.inf, 1, logs)


def spread_of(
    groups: Sequence[np.ndarray], resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> MedianSpread:
    """`median_spread` for several processes, `single_process_spread` for one."""
    if len(groups) >= 2:
        return median_spread(groups, resamples, seed)
    return single_process_spread(groups[0], resamples, seed)


def t_quantile(q: float, df: float) -> float:
    """Student's t quantile (scipy.special: scipy.stats would add half a second to CLI commands)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, q)) if math.isfinite(df) else float(_normal_quantile(q))


def t_two_sided_p(t: float, df: float) -> float:
    from scipy.special import ndtr, stdtr

    tail = stdtr(df, -abs(t)) if math.isfinite(df) else ndtr(-abs(t))
    return float(min(1.0, 2.0 * tail))


def _normal_quantile(q: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(q))


def welch_df(variance_a: float, df_a: float, variance_b: float, df_b: float) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of two variance estimates."""
    numerator = (variance_a + variance_b) ** 2
    denominator = (variance_a**2 / df_a if math.isfinite(df_a) else 0.0) + (
        variance_b**2 / df_b if math.isfinite(df_b) else 0.0
    )
    return numerator / denominator if denominator > 0 else math.inf
