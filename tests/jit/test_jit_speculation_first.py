"""A decision on tensor data in a graph that also mutates tensors: the decision is re-checked by a
check prefix before the graph runs, so a failed check has changed nothing (BatchNorm statistics,
buffers and inputs stay those of eager execution)."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from grad_helpers import check_grads


class BatchNormBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        y = self.bn(self.fc(x))
        if self.bn.running_mean.sum() > 0:  # read after this call updated the running statistics
            y = y.clamp(-1.5, 1.5)
        return y


class InPlaceThroughView(nn.Module):
    def forward(self, x):
        x[0].add_(1.0)  # mutates the input through a view before the decision reads it
        if x.sum() > 0:
            return x * 2
        return x - 1


class EmaThenAssert(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("ema", torch.zeros(4))

    def forward(self, x):
        with torch.no_grad():
            self.ema.mul_(0.5).add_(x.mean(0), alpha=0.5)
        if bool(torch.isfinite(self.ema).all()) and self.ema.norm() < 2:
            return self.fc(x) + self.ema
        return self.fc(x)


def scaled(shape, scales, offsets=None):
    offsets = offsets or [0.0] * len(scales)
    return lambda i: (
        torch.randn(*shape, generator=torch.Generator().manual_seed(i)) * scales[i] + offsets[i],
    )


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_mutating_graph_with_a_data_dependent_branch(backend):
    inputs = scaled((6, 4), [1] * 6, [3.0, 3.0, -40.0, -40.0, 60.0, 60.0])
    jitted = check_grads(BatchNormBranch, inputs, calls=6, backend=backend)
    report = jitted.explain()
    # the branch flips at call 2 (a miss: the check failed before the statistics changed, and the
    # call was captured again) and back at call 4 (the first graph's check passes again)
    assert not report.fallbacks and len(report.graphs) == 2 and report.misses == 1
    assert sum(g.hits for g in report.graphs) == 4


def test_input_mutated_through_a_view():
    jitted = check_grads(InPlaceThroughView, scaled((3, 2), [1, 1, 1, 1, 1]), calls=5, input_grads=False)
    assert not jitted.explain().fallbacks


def test_mutated_buffer_read_by_the_decision():
    scales = [1, 1, 20, 20, 1]
    jitted = check_grads(EmaThenAssert, scaled((3, 4), scales), calls=5)
    report = jitted.explain()
    assert not report.fallbacks and sum(g.hits for g in report.graphs) >= 1


class DropoutDecides(nn.Module):
    def forward(self, x):
        y = nn.functional.dropout(x, 0.5, training=True)
        x.mul_(2)
        if y.sum() > 0:
            return y
        return -y


def test_decision_on_random_values_in_a_mutating_graph_is_split_there():
    # no check prefix can decide before the graph draws: the graph is split after the decision's
    # value instead (a data break, see test_jit_breaks.py), results and gradients as eager
    jitted = check_grads(DropoutDecides, scaled((8,), [1, 1, 1]), calls=3, input_grads=False)
    report = jitted.explain()
    assert not report.fallbacks and [b.kind for b in report.graph_breaks] == ["data"]


class DropoutAfterDecision(nn.Module):
    def forward(self, x):
        scale = 2.0 if x.sum() > 0 else 0.5  # decided before, and independently of, the dropout
        return nn.functional.dropout(x * scale, 0.5, training=True)


def test_graph_with_dropout_checks_before_drawing():
    jitted = check_grads(DropoutAfterDecision, scaled((8,), [1] * 5, [1.0, 1.0, -1.0, -1.0, 1.0]), calls=5)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 2 and sum(g.hits for g in report.graphs) == 3


class RecordsThenDecides(nn.Module):
    def __init__(self):
        super().__init__()
        self.history = []
        self.last = None

    def forward(self, x):
        self.last = x.detach() * 2
        self.history.append(x.shape[0])
        if x.mean() > 0:
            self.history.append("exp")  # the arms differ in Python: one entry per outcome
            return x.exp()
        return x.abs()


def test_replayed_python_effects_wait_for_the_checks():
    jitted = check_grads(RecordsThenDecides, scaled((4,), [1] * 5, [2.0, 2.0, -2.0, 2.0, -2.0]), calls=5)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 2 and sum(g.hits for g in report.graphs) == 3
