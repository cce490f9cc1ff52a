"""Comparing two stored runs cell by cell: ratio of medians with a bootstrap confidence interval,
a Mann-Whitney U test, a geometric-mean summary per backend, and the regression gate for CI.

Layers usable alone: `jitlab.stats.comparison` works on two lists of samples, `matching` pairs
cells of two runs, `runs` compares whole runs from the store, `gate` turns a comparison into a
pass/fail, `table` prints it.

May import: jitlab.stats, jitlab.store, jitlab.engine.canary, jitlab.engine.load, jitlab.formatting,
jitlab.errors and this folder (never the reports, which show comparisons).
"""

from jitlab.compare.gate import check_regressions
from jitlab.compare.runs import CellComparison, RunComparison, compare_runs
from jitlab.stats.comparison import SampleComparison, compare_samples

__all__ = [
    "CellComparison",
    "RunComparison",
    "SampleComparison",
    "check_regressions",
    "compare_runs",
    "compare_samples",
]
