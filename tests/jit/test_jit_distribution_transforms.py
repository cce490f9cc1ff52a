"""torch.distributions transforms are interpreted: `Transform.__call__` calls the user's `_call`
back, and with `cache_size=1` it keeps the last input and output on the transform. Run natively,
that callback made the call fall back (ParityBench's pyro Spline, a transform that is also an
nn.Module); interpreted, the call is one graph, and the cache is read and written as eager does."""

from __future__ import annotations

import torch
from torch import nn
from torch.distributions import ComposeTransform, ExpTransform, Transform, constraints

from jitlab.jit import jit


class Shift(Transform):
    domain = constraints.real
    codomain = constraints.real
    bijective = True

    def __init__(self, shift: float, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.shift = shift

    def _call(self, x):
        return x * 2 + self.shift


class LearnedShift(Transform, nn.Module):
    """A transform with parameters, as pyro's TransformModule makes them."""

    domain = constraints.real
    codomain = constraints.real
    bijective = True

    def __init__(self):
        Transform.__init__(self)
        nn.Module.__init__(self)
        self.shift = nn.Parameter(torch.tensor([0.5, -1.0, 2.0]))

    def __hash__(self):
        return super(nn.Module, self).__hash__()

    def _call(self, x):
        return torch.tanh(x) + self.shift


def _served_by_one_graph(fn, make_input, calls=3):
    jitted = jit(fn, backend="eager")
    for _ in range(calls):
        x = make_input()
        assert torch.equal(jitted(x), fn(x))
    report = jitted.explain()
    assert report.fallbacks == () and report.captures == 1, report
    assert report.graphs[0].hits == calls - 1
    return jitted


def test_a_users_transform_and_a_composition_with_torchs_own_are_one_graph():
    shift = Shift(1.0)
    composed = ComposeTransform([Shift(-0.5), ExpTransform()])
    _served_by_one_graph(lambda x: composed(shift(x)), lambda: torch.randn(4))


def test_a_transform_that_is_a_module_is_one_graph():
    _served_by_one_graph(LearnedShift(), lambda: torch.randn(2, 3))


def test_the_transforms_cache_is_read_and_written_as_eager_does():
    eager_t, jit_t = Shift(3.0, cache_size=1), Shift(3.0, cache_size=1)
    jitted = jit(lambda x: jit_t(x) + 1, backend="eager")
    same = torch.randn(5)
    for x in (same, same, torch.randn(5), same):
        expected = eager_t(x) + 1
        assert torch.equal(jitted(x), expected)
        # the cache holds this call's input itself, and an output equal to eager's
        assert jit_t._cached_x_y[0] is x and eager_t._cached_x_y[0] is x
        assert torch.equal(jit_t._cached_x_y[1], eager_t._cached_x_y[1])
    # a hit on the cache returns the cached tensor itself, under the JIT as in eager code
    first = jit_t(same)
    assert jit_t(same) is first
