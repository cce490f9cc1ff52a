"""numba and numba-parallel draw pi's points from a counter-based generator: each point's bits are a
hash of (seed, index). The estimate depends on the seed only, not on the thread count (unlike
np.random.seed under parallel=True, which seeds one thread), nor on the block size; and the loop
vectorises."""

import math
import platform
import re

import numpy as np
import pytest

from jitlab.backends import get_backend
from jitlab.engine.runner import execute_cell
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.workloads import pi as pi_module
from jitlab.workloads.pi import pi


def test_numba_estimates_do_not_depend_on_thread_count():
    policy = TimingPolicy(budget_s=0.05, min_samples=1)
    n = 300_000  # several blocks
    results = [
        execute_cell(CellSpec("pi", backend, n, threads=threads, policy=policy), 300)
        for backend, threads in (("numba-parallel", 1), ("numba-parallel", 2), ("numba", 2))
    ]
    assert all(r.status == "ok" for r in results), [r.reason for r in results]
    common = min(len(r.values) for r in results)
    assert common >= 3
    one, two, serial = (r.values[:common] for r in results)
    assert one == two == serial
    assert len(set(one)) == common  # each seed draws other points
    assert all(abs(v - math.pi) < 0.02 for v in one)


def build(backend: str, n: int):
    prepared = pi.build(get_backend(backend), n)
    return lambda seed: prepared.fn(*prepared.args(seed))


def test_the_estimate_does_not_depend_on_the_block_size(monkeypatch):
    n = 100_003  # not a multiple of either block size
    default = [build("numba", n)(seed) for seed in range(3)]
    monkeypatch.setattr(pi_module, "POINT_BLOCK", 1 << 10)
    small_blocks = [build("numba-parallel", n)(seed) for seed in range(3)]
    assert small_blocks == default


def test_estimates_are_distributed_as_sampling_theory_says():
    """Over 40 seeds at n = 10**6, (estimate - pi) / sigma has mean ~0 and variance ~1."""
    n = 10**6
    estimate = build("numba", n)
    sigma = math.sqrt(math.pi * (4 - math.pi) / n)
    z = np.array([(estimate(seed) - math.pi) / sigma for seed in range(40)])
    assert abs(z.mean()) < 4 / math.sqrt(len(z)), z  # 4 standard errors of the mean
    assert 0.35 < z.var(ddof=1) < 2.0, z  # chi-square with 39 degrees of freedom: beyond 99.99%
    assert np.abs(z).max() < 5, z


@pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"), reason="checks x86 vector registers"
)
def test_the_point_loop_is_vectorised():
    estimate = pi.build(get_backend("numba"), 10_000).fn
    estimate(1)  # compiles count_block too
    closure = dict(
        zip(estimate.py_func.__code__.co_freevars, (c.cell_contents for c in estimate.py_func.__closure__))
    )
    assembly = "\n".join(closure["count_block"].inspect_asm().values())
    # packed 64-bit integer operations on 256- or 512-bit registers: the hash runs on 4 or 8 points at once
    packed = re.findall(r"^\s+(vp\w+q)\s+[^\n]*%[yz]mm", assembly, re.M)
    assert len(packed) >= 10, f"no vectorised hash in count_block:\n{assembly[:3000]}"
