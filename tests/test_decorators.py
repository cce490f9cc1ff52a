"""The source document's decorators: stackable over a JIT decorator, synchronised, logged."""

import logging
import math

import numba
import numpy as np
import pytest

import jitlab


def test_timed_and_accuracy_stacked_over_numba(caplog):
    @jitlab.timed
    @jitlab.accuracy(reference=math.pi)
    @numba.njit
    def estimate_pi(n):
        np.random.seed(0)
        inside = 0
        for _ in range(n):
            x, y = np.random.random(), np.random.random()
            inside += x * x + y * y <= 1.0
        return 4.0 * inside / n

    with caplog.at_level(logging.INFO, logger="jitlab"):
        value = estimate_pi(100_000)
        estimate_pi(100_000)
    assert abs(value - math.pi) < 0.03
    timings = [r for r in caplog.records if hasattr(r, "jitlab_time_s")]
    errors = [r for r in caplog.records if hasattr(r, "jitlab_error")]
    assert [r.jitlab_call for r in timings] == [1, 2]
    assert "first call (includes compilation)" in timings[0].getMessage()
    assert all(r.jitlab_time_s > 0 for r in timings)
    assert errors[0].jitlab_error == pytest.approx(abs(value - math.pi))
    assert errors[0].jitlab_score == pytest.approx(1 - abs(value - math.pi) / math.pi)
    assert estimate_pi.__name__ == "estimate_pi"


def test_timed_waits_for_jax(caplog):
    import jax
    import jax.numpy as jnp

    @jitlab.timed
    @jax.jit
    def big(x):
        return jnp.sum(jnp.sin(x) ** 2)

    x = jnp.ones(2_000_000)
    with caplog.at_level(logging.INFO, logger="jitlab"):
        result = big(x)
    # the decorator waited: the array is ready when it returns
    assert result.is_ready()
    assert float(result) == pytest.approx(2_000_000 * math.sin(1.0) ** 2, rel=1e-4)


def test_accuracy_with_a_callable_reference(caplog):
    @jitlab.accuracy(reference=lambda a: float(np.sum(a.astype(np.float64))))
    def total(a):
        return np.sum(a, dtype=np.float32)

    with caplog.at_level(logging.INFO, logger="jitlab"):
        total(np.full(10**6, 0.1, dtype=np.float32))
    assert total.last_error > 0  # float32 accumulation loses precision, and the decorator sees it
