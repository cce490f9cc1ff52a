"""A tensor operation that raises during the capture, caught by the program: cached when the
failure follows from shapes and dtypes alone (it raises on meta tensors too), still run eagerly
with its reason when it may follow from tensor values."""

from __future__ import annotations

import torch
import torch.nn as nn
from jit_helpers import check_program

from jitlab.jit import jit


class ResizedPositions(nn.Module):
    """As vformer's PVT: add the positional embedding, or resize it when the shapes do not match."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(8))

    def forward(self, x):
        try:
            x = x + self.pos
        except RuntimeError:
            x = x + nn.functional.interpolate(self.pos[None, None], size=x.shape[-1])[0, 0]
        return x * 2


def test_a_shape_mismatch_caught_by_the_program_is_cached():
    shapes = [(2, 8), (2, 6), (2, 8), (2, 6), (2, 5)]
    jitted = check_program(ResizedPositions, [((torch.randn(*s),), {}) for s in shapes])
    report = jitted.explain()
    assert report.fallbacks == ()
    assert report.captures == 3 and sum(g.hits for g in report.graphs) == 2


def test_sizes_that_decide_the_failure_stay_static():
    """After the batch size changed, dimension 0 is symbolic; the failing add fixes the shapes it
    was given, so a later call of another size takes the path eager code takes."""
    shapes = [(2, 8), (3, 8), (3, 6), (4, 6), (4, 8), (5, 6), (2, 6), (6, 8)]
    jitted = check_program(ResizedPositions, [((torch.randn(*s),), {}) for s in shapes])
    assert jitted.explain().fallbacks == ()


def factor_or_identity(a):
    try:
        return torch.linalg.cholesky(a)
    except RuntimeError:  # not positive definite: decided by the values
        return torch.eye(a.shape[0])


def test_a_failure_decided_by_tensor_values_still_runs_eagerly_with_the_reason():
    spd = torch.eye(3) * 2
    inputs = [((-spd,), {}), ((spd,), {}), ((-spd,), {})]  # the capture sees the failure
    jitted = check_program(lambda: factor_or_identity, inputs)
    assert any("cholesky raised" in reason for reason in jitted.explain().fallbacks)
    assert torch.equal(jitted(-spd), torch.eye(3))


def test_an_uncaught_failure_still_reaches_the_caller():
    model = ResizedPositions()
    jitted = jit(lambda x: x + model.pos)
    for _ in range(2):
        try:
            jitted(torch.randn(2, 6))
        except RuntimeError as exc:
            assert "must match the size" in str(exc)
        else:
            raise AssertionError("the add did not raise")


def view_by_a_count(x, idx):
    k = int(idx.sum())  # read from tensor data
    try:
        y = x.view(k, -1)
    except RuntimeError:  # 6 elements do not split into k rows
        y = x.view(1, -1) * 2
    return y.sum(0)


def test_a_number_read_from_data_that_decided_the_failure_is_re_checked():
    inputs = [((torch.randn(6), torch.tensor([k])), {}) for k in (4, 4, 2, 4, 2)]
    jitted = check_program(lambda: view_by_a_count, inputs)
    report = jitted.explain()
    assert report.fallbacks == () and report.captures == 2
    assert "__int__(...) == 4" in report.graphs[0].speculations
