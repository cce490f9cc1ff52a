"""Ratios of two cells of one run from the same rounds: how many times faster one backend is than
another, with the machine's drift taken out.

A run measures process k of every cell in round k (`jitlab.engine.rounds`), so process k of cell A
and process k of cell B ran minutes apart at most, at about the same machine speed. Their ratio is
free of the drift that separates round 0 from round 2, which widens each cell's own interval. So a
ratio between two cells of one run is the geometric mean over rounds of the per-round ratios of
process medians, with a Student t interval over rounds (rounds - 1 degrees of freedom). Cells that
were not measured in rounds (older runs), or share fewer than two rounds, get the ratio of their
medians and no interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitlab.compare.paired import round_medians
from jitlab.stats.paired import log_interval
from jitlab.store import CellRecord


@dataclass(frozen=True)
class RoundRatio:
    """median(A) / median(B) per round, combined: above 1, B is faster."""

    ratio: float
    ci_low: float | None
    ci_high: float | None
    rounds: int
    #: "per-round" or "medians" (no rounds in common: the ratio of the cells' medians)
    method: str

    def to_json(self) -> dict[str, Any]:
        interval = None if self.ci_low is None else [self.ci_low, self.ci_high]
        return {"ratio": self.ratio, "ci95": interval, "rounds": self.rounds, "method": self.method}


def round_ratio(a: CellRecord, b: CellRecord, confidence: float = 0.95) -> RoundRatio:
    """How many times faster B is than A, from the rounds both were measured in."""
    rounds_a, rounds_b = round_medians(a), round_medians(b)
    common = sorted(set(rounds_a) & set(rounds_b))
    if len(common) < 2:
        return RoundRatio(a.summary.median / b.summary.median, None, None, len(common), "medians")
    mean, half, _ = log_interval(np.log([rounds_a[k] / rounds_b[k] for k in common]), confidence)
    return RoundRatio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(common), "per-round")
