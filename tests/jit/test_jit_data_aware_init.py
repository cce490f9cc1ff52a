"""A data-aware initialisation on the first call (NumPy draws, then `self.initialized = True`) runs
eagerly, and later calls, which take the other path, are captured.

jitlab.jit used to fall back to eager for good after the first call's capture failed (ParityBench's
manujosephv/pytorch_tabular `DenseODSTBlock`: `np.random.beta` in `ODST.initialize`), as if every
call drew from NumPy's generator."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from jitlab.jit import jit


class DataAwareInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.zeros(3))
        self.initialized = False

    def forward(self, x):
        if not self.initialized:
            q = np.random.beta(1.0, 1.0, size=[3])
            with torch.no_grad():
                self.scale.data[...] = torch.as_tensor(q, dtype=torch.float32) + x.mean(0)
            self.initialized = True
        return x * self.scale


class DrawsEveryCall(nn.Module):
    """Draws an array from NumPy's generator on every call, and flips a flag it reads: never
    capturable (a float drawn would be a graph node, test_jit_numpy_draws.py; an array is not)."""

    def __init__(self):
        super().__init__()
        self.flag = False

    def forward(self, x):
        self.flag = not self.flag
        noise = np.random.rand(*x.shape)
        return x * torch.as_tensor(noise, dtype=x.dtype)


def _eager_and_jitted(make, calls):
    np.random.seed(0)
    eager_model = make()
    expected = [eager_model(x) for x in calls]
    np.random.seed(0)
    model = make()
    jitted = jit(model, backend="eager")
    return expected, [jitted(x) for x in calls], jitted


def test_the_first_call_initialises_eagerly_and_later_calls_are_one_cached_graph():
    calls = [torch.randn(2, 3) for _ in range(4)]
    expected, got, jitted = _eager_and_jitted(DataAwareInit, calls)
    for want, out in zip(expected, got, strict=True):
        assert torch.equal(want, out)
    report = jitted.explain()
    assert report.disabled is None and report.fallbacks == ()
    assert report.captures == 2 and sum(g.hits for g in report.graphs) == 2


def test_a_call_that_draws_every_time_still_falls_back_for_good_with_the_reason():
    calls = [torch.randn(3) for _ in range(5)]
    expected, got, jitted = _eager_and_jitted(DrawsEveryCall, calls)
    for want, out in zip(expected, got, strict=True):
        assert torch.equal(want, out)
    report = jitted.explain()
    assert report.captures == 3  # it set what it read: two more tries, then eager for good
    assert report.disabled is not None and "RandomState.rand" in report.disabled
