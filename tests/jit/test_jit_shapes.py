"""Symbolic sizes (automatic dynamic shapes): after a capture misses on an input size, the next one
keeps that size symbolic, so one cache entry serves every batch size; and never a wrong result when
a size decides Python control flow."""

from __future__ import annotations

import copy
import operator

import pytest
import torch
import torch.nn as nn

from jitlab.jit import jit

BATCHES = list(range(2, 22))  # 20 batch sizes


def run_batches(model: nn.Module, make, backend: str = "eager", batches=BATCHES, grad: bool = False):
    """Call the jitted copy and the model on every batch size; outputs must be equal."""
    model = model.eval()
    jitted = jit(copy.deepcopy(model), backend=backend)
    for b in batches:
        x = make(b)
        with torch.set_grad_enabled(grad):
            expected, got = model(*x), jitted(*x)
        assert torch.allclose(got, expected, atol=1e-5, rtol=1e-5), (b, (got - expected).abs().max())
    return jitted.explain()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        b = x.shape[0]
        h = torch.relu(self.fc1(x)).view(b, 4, 8).sum(1)  # a size handed to a tensor op
        if b > 1:  # a size decides Python: a fact, checked as a guard, not a fixed value
            h = h + torch.zeros(b, 8)
        return self.fc2(h)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        layers = []
        for i in range(4):
            layers += [nn.Conv2d(3 if i == 0 else 8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True, dropout=0.0)

    def forward(self, x):
        return self.layer(x)


class RNNLoop(nn.Module):
    """An RNN written as a Python loop over a fixed length: the length is read by `range`, so it is
    fixed (a guard); the batch size stays symbolic."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.rec = nn.Linear(16, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        batch, steps, _ = x.shape
        h = x.new_zeros(batch, 16)
        for t in range(steps):
            h = torch.tanh(self.inp(x[:, t]) + self.rec(h))
        return self.out(h)


MODELS = {
    "mlp": (MLP, lambda b: (torch.randn(b, 16),)),
    "conv": (ConvNet, lambda b: (torch.randn(b, 3, 8, 8),)),
    "transformer": (Encoder, lambda b: (torch.randn(b, 6, 32),)),
    "rnn_loop": (RNNLoop, lambda b: (torch.randn(b, 5, 8),)),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_twenty_batch_sizes_make_at_most_two_captures(name):
    model_class, make = MODELS[name]
    torch.manual_seed(0)
    report = run_batches(model_class(), make)
    assert report.captures <= 2 and not report.fallbacks, str(report)
    symbolic = report.graphs[-1]
    assert symbolic.symbolic_sizes and symbolic.symbolic_sizes[0].startswith("args[0] (*,"), str(report)
    assert symbolic.hits == len(BATCHES) - 2  # the first two calls were captures


def test_training_mode_and_gradients_with_symbolic_sizes():
    torch.manual_seed(0)
    model = MLP()
    jitted = jit(copy.deepcopy(model), backend="eager")
    for b in (3, 5, 9, 4):
        x = torch.randn(b, 16)
        expected = model(x).square().sum()
        got = jitted(x).square().sum()
        expected.backward()
        got.backward()
        assert torch.allclose(got, expected)
    for p, q in zip(model.parameters(), jitted.module.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-5)
    assert jitted.explain().captures == 2


class SizeBranch(nn.Module):
    def forward(self, x):
        if x.shape[0] > 8:  # BRANCH
            return x.cumsum(0) * 2
        return x - x.mean(0)


def test_a_size_that_decides_control_flow_is_a_guard_and_never_wrong():
    report = run_batches(SizeBranch(), lambda b: (torch.randn(b, 3),))
    assert not report.fallbacks
    # first capture static; then one symbolic entry per side of the branch
    assert report.captures == 3 and report.graph_count == 3
    guards = [g for entry in report.graphs for g in entry.guards if g.startswith("SHAPE")]
    assert "SHAPE: not (v0.size()[0] > 8)" in guards and "SHAPE: v0.size()[0] > 8" in guards


class LoopOverBatch(nn.Module):
    def forward(self, x):
        total = x.new_zeros(x.shape[1])
        for i in range(x.shape[0]):  # Python iterates over a size: its value is fixed by a guard
            total = total + x[i] * (i + 1)
        return total


def test_a_size_read_by_range_is_fixed_by_a_guard():
    report = run_batches(LoopOverBatch(), lambda b: (torch.randn(b, 3),), batches=[2, 3, 4, 3, 4])
    assert report.captures == 3
    guards = [g for entry in report.graphs for g in entry.guards if g.startswith("SHAPE")]
    assert "SHAPE: v0.size()[0] == 3" in guards and "SHAPE: v0.size()[0] == 4" in guards


class NativeShapeRead(nn.Module):
    def forward(self, x):
        rows, cols = operator.attrgetter("shape")(x)  # native code reads the sizes: they are fixed
        return x.reshape(rows * cols) * 2


def test_sizes_read_by_code_run_natively_are_fixed():
    report = run_batches(NativeShapeRead(), lambda b: (torch.randn(b, 3),), batches=[4, 5, 6, 5, 6])
    assert report.captures == 3 and not report.fallbacks
    guards = [g for entry in report.graphs for g in entry.guards if g.startswith("SHAPE")]
    assert "SHAPE: v0.size()[0] == 5" in guards and "SHAPE: v0.size()[0] == 6" in guards


class AddPair(nn.Module):
    def forward(self, x, y):
        return (x + y).relu()


def test_equal_sizes_the_graph_relies_on_are_guarded():
    model = AddPair()
    jitted = jit(copy.deepcopy(model), backend="aot_eager")
    for b in (3, 4, 6):
        x, y = torch.randn(b, 5), torch.randn(b, 5)
        assert torch.allclose(jitted(x, y), model(x, y))
    guards = [g for entry in jitted.explain().graphs for g in entry.guards if g.startswith("SHAPE")]
    assert any("v0.size()[0]" in g and "v1.size()[0]" in g for g in guards), guards
    with pytest.raises(RuntimeError, match="must match"):  # as eager: no silent broadcasting
        jitted(torch.randn(7, 5), torch.randn(1, 5) * torch.ones(6, 1))


def test_compiled_graphs_keep_sizes_0_and_1_apart():
    torch.manual_seed(0)
    report = run_batches(
        MLP(), lambda b: (torch.randn(b, 16),), backend="aot_eager", batches=[3, 4, 5, 1, 6, 1]
    )
    assert report.captures == 3 and report.graph_count == 3
    guards = [g for entry in report.graphs for g in entry.guards if g.startswith("SHAPE")]
    assert any("2 <= v0.size()[0]" in g for g in guards), guards


def test_inductor_compiles_one_graph_for_every_batch_size():
    torch.manual_seed(0)
    report = run_batches(MLP(), lambda b: (torch.randn(b, 16),), backend="inductor", batches=[3, 4, 5, 9, 17])
    assert report.captures == 2 and report.graphs[-1].hits == 3
    assert report.graphs[-1].backend_note is None  # compiled, not run eagerly after a compiler failure


@torch.compiler.disable  # runs eagerly: a graph break
def opaque_scale(t):
    return t * 2 + t.shape[0]


class BreakInMiddle(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        z = opaque_scale(h)
        return self.fc2(z).view(x.shape[0], 2, 2).sum(1) + h[:, :2]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_symbolic_sizes_across_a_graph_break(backend):
    torch.manual_seed(0)
    model = BreakInMiddle()
    twin = copy.deepcopy(model)
    jitted = jit(twin, backend=backend)
    for b in (4, 5, 7, 9, 12, 3):
        x = torch.randn(b, 8)
        expected, got = model(x), jitted(x)
        assert torch.allclose(got, expected, atol=1e-5), b
        expected.square().sum().backward()
        got.square().sum().backward()  # gradients flow through both graphs and the break
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-4)
    report = jitted.explain()
    assert report.captures == 2 and report.graphs[-1].hits == 4 and report.deopts == 0
    assert report.graphs_per_call == 2 and report.graphs[-1].symbolic_sizes == (
        "args[0] (*, 8)",
        "b0 (*, 16)",
    )


class Regroup(nn.Module):
    def forward(self, x):
        return x.view(-1, 4).softmax(-1)  # needs the number of elements to divide by 4


def test_divisibility_a_view_needs_is_guarded():
    model = Regroup()
    jitted = jit(copy.deepcopy(model), backend="aot_eager")
    for b in (2, 4, 6, 8):  # 6 * b elements: divisible by 4 for even b
        x = torch.randn(b, 6)
        assert torch.allclose(jitted(x), model(x))
    guards = [g for entry in jitted.explain().graphs for g in entry.guards if g.startswith("SHAPE")]
    assert any("% 2" in g or "% 4" in g or "Mod" in g for g in guards), guards
    with pytest.raises(RuntimeError, match="invalid for input of size 18"):  # as eager raises
        jitted(torch.randn(3, 6))
    assert jitted.explain().captures == 3
