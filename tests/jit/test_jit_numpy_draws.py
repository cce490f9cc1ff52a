"""Floats drawn from NumPy's generators (`np.random.random()`, `normal()`, a `Generator`'s methods)
are graph nodes with the eager backend, as Python's `random` draws are: every call draws afresh, in
program order, and leaves the generator where eager code leaves it.

The call used to run eagerly ("state outside the graph"), e.g. the layer drop of ParityBench's
adapter-hub WavLMAdapter, which draws on every call and reads the draw only in training mode."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from jitlab.jit import jit


class LayerDrop(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(3, 3) for _ in range(2))
        self.layerdrop = 0.5

    def forward(self, x):
        for layer in self.layers:
            p = np.random.random()
            if not self.training or p > self.layerdrop:
                x = layer(x)
        return x


def noisy_scale(x):
    return x * np.random.normal() + np.random.uniform(0.0, 1.0)


RNG = np.random.default_rng(0)


def generator_scale(x):
    return x * RNG.standard_normal()


def _same_as_eager(fn, calls, reseed):
    expected, after = [], []
    reseed()
    for x in calls:
        expected.append(fn(x))
        after.append(np.random.random())
    jitted = jit(fn, backend="eager")
    reseed()
    for x, want, state in zip(calls, expected, after, strict=True):
        assert torch.equal(jitted(x), want)
        assert np.random.random() == state  # the generator is where eager code left it
    return jitted.explain()


def test_a_draw_never_read_is_one_graph_and_advances_the_generator():
    model = LayerDrop().eval()
    report = _same_as_eager(model, [torch.randn(2, 3) for _ in range(3)], lambda: np.random.seed(0))
    assert report.fallbacks == () and report.breaks == () and report.graphs[0].hits == 2


def test_draws_handed_to_torch_are_drawn_afresh_on_every_call():
    report = _same_as_eager(noisy_scale, [torch.randn(3) for _ in range(3)], lambda: np.random.seed(1))
    assert report.fallbacks == () and report.graphs[0].hits == 2


def test_a_generator_object_draws_afresh_too():
    global RNG
    calls = [torch.randn(3) for _ in range(3)]
    RNG = np.random.default_rng(5)
    expected = [generator_scale(x) for x in calls]
    RNG = np.random.default_rng(5)
    jitted = jit(generator_scale, backend="eager")
    for x, want in zip(calls, expected, strict=True):
        assert torch.equal(jitted(x), want)
    assert jitted.explain().fallbacks == ()


def test_a_draw_python_decides_on_is_re_checked_and_equals_eager():
    """In training mode the draw decides which layers run: the entry is specialised on the outcome,
    re-checks it after the draw and resumes from there when it differs."""
    model = LayerDrop().train()
    report = _same_as_eager(model, [torch.randn(2, 3) for _ in range(4)], lambda: np.random.seed(2))
    assert report.breaks != ()
