"""numba-parallel draws from independent per-block streams: the result depends on the seed only,
not on how many threads ran the blocks (unlike np.random.seed under parallel=True)."""

import math

from jitlab.engine.runner import execute_cell
from jitlab.engine.spec import CellSpec, TimingPolicy


def test_numba_parallel_estimate_does_not_depend_on_thread_count():
    policy = TimingPolicy(budget_s=0.05, min_samples=1)
    n = 300_000  # several independent blocks
    one = execute_cell(CellSpec("pi", "numba-parallel", n, threads=1, policy=policy), 300)
    two = execute_cell(CellSpec("pi", "numba-parallel", n, threads=2, policy=policy), 300)
    assert one["status"] == two["status"] == "ok", (one.get("reason"), two.get("reason"))
    common = min(len(one["values"]), len(two["values"]))
    assert common >= 3
    assert one["values"][:common] == two["values"][:common]
    assert all(abs(v - math.pi) < 0.02 for v in one["values"])
