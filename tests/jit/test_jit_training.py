"""Training through jitlab.jit: `jit(model)` in train mode, `loss.backward()` and an optimizer step
outside, gives the parameters, gradients, buffers and losses of eager training after every step."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from grad_helpers import train_steps
from test_jit_autograd_functions import RoundSTE, Swish

from jitlab.jit import jit


class Net(nn.Module):
    """Dropout, BatchNorm in train mode, custom autograd Functions and both weight norms."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.utils.weight_norm(nn.Linear(8, 16))
        self.bn = nn.BatchNorm1d(16)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.utils.parametrizations.weight_norm(nn.Linear(16, 4))

    def forward(self, x):
        h = Swish.apply(self.bn(self.fc1(x)))
        h = self.drop(h)
        h = RoundSTE.apply(torch.sigmoid(h), 4)
        return self.fc2(h)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x.view(-1, 2, 2, 2))))
        return self.head(h.mean(dim=(2, 3)))


def inputs(i):
    g = torch.Generator().manual_seed(i)
    return torch.randn(6, 8, generator=g), torch.randn(6, 4, generator=g)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("make", [Net, ConvNet], ids=lambda m: m.__name__)
def test_training_steps_equal_eager(make, backend, optimizer):
    jitted = train_steps(make, inputs, steps=6, backend=backend, optimizer=optimizer)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 1 and report.graphs[0].hits == 5


@pytest.mark.slow
def test_training_with_inductor():
    jitted = train_steps(ConvNet, inputs, steps=5, backend="inductor", optimizer="sgd")
    report = jitted.explain()
    assert not report.fallbacks and report.graphs[0].hits == 4 and report.graphs[0].backend_note is None


def test_train_eval_switch_recaptures():
    torch.manual_seed(0)
    model = Net()
    jitted = jit(model, backend="eager")
    x, _ = inputs(0)
    torch.manual_seed(1)
    a = jitted(x)
    model.eval()
    b = jitted(x)
    c = model(x)
    assert torch.allclose(b, c) and not torch.allclose(a, b)
    assert len(jitted.explain().graphs) == 2


def test_whole_training_step_inside_the_call_is_captured():
    torch.manual_seed(0)
    models = [nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in models]

    def make_step(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss.detach()

        return step

    eager_step = make_step(models[0], opts[0])
    jitted_step = jit(make_step(models[1], opts[1]), backend="eager")
    for i in range(5):
        g = torch.Generator().manual_seed(i)
        x, y = torch.randn(3, 4, generator=g), torch.randn(3, 1, generator=g)
        assert torch.equal(eager_step(x, y), jitted_step(x, y))
        for p, q in zip(models[0].parameters(), models[1].parameters()):
            assert torch.equal(p, q)
    report = jitted_step.explain()  # test_jit_training_step.py tests the whole step in depth
    assert not report.fallbacks and report.graphs_per_call == 1 and sum(g.hits for g in report.graphs) == 3
