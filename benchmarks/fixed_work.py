"""A workload of fixed work for `benchmarks/loaded_verdicts.py`: a pure-Python loop of `size`
iterations (python backend) and a NumPy reduction of `size` elements repeated (numpy backend).

`JITLAB_BENCH_FACTOR` in the environment (default 1) scales the work without changing the cell's
name, size or parameters, so a run with factor 1.05 is "a 5% slower build" of the same cell: its
loop runs 5% more iterations, and `jitlab compare` pairs the two runs' cells.
"""

from __future__ import annotations

import os

import numpy as np

import jitlab

FACTOR = float(os.environ.get("JITLAB_BENCH_FACTOR", "1"))

fixed = jitlab.Workload(
    "fixed-work",
    description="a pure-Python loop of `size` iterations (times JITLAB_BENCH_FACTOR)",
    sizes=[200_000],
    seeds=1,
)


@fixed.implement("python")
def _loop(ctx):
    iterations = int(round(ctx.size * FACTOR))

    def run(seed):
        total = 0
        for i in range(iterations):
            total += i * i & 0xFF
        return float(total)

    return run


@fixed.implement("numpy")
def _reduce(ctx):
    data = np.arange(ctx.size, dtype=np.float64)
    repeats = int(round(20 * FACTOR))

    def run(seed):
        total = 0.0
        for _ in range(repeats):
            total += float(np.add.reduce(data * 1.0001))
        return total

    return run
