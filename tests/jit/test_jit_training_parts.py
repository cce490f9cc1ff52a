"""A training step with a compiling backend is cut into parts (frontend/host_split.py); each part
must be compiled, and one that is not must be said in explain(), never left silently uncompiled.

Gemma's RMSNorm computes `1.0 + self.weight.float()`: on a float32 parameter `.float()` returns the
parameter itself. Recorded as a node of its own, that node stood for the parameter from then on, so
the forward part had one output requiring grad per norm weight (their `.grad` reads), and a part
with more than one such output runs uncompiled (a compiled part is one autograd node). Gemma 2's
step ran 1.9x slower than torch.compile's. Compared with an eager copy after every step."""

from __future__ import annotations

import copy

import torch
import torch.nn as nn
from training_step_helpers import OPTIMIZERS, state_tensors
from training_step_helpers import mse_step as step

from jitlab.jit import jit


class ScaledNorm(nn.Module):
    """RMSNorm as Gemma writes it, and conversions that return their input on float32."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        return (normed * (1.0 + self.weight.float())).to(torch.float32).type_as(x)


class NormModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.norm1 = nn.Linear(6, 12), ScaledNorm(12)
        self.fc2, self.norm2 = nn.Linear(12, 3), ScaledNorm(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm2(self.fc2(torch.tanh(self.norm1(self.fc1(x)))))


def step_keeping_hidden(
    model: NormModel, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two results requiring grad outlive the forward: the loss (its backward) and `hidden`."""
    hidden = model.norm1(model.fc1(x))
    loss = nn.functional.mse_loss(model.fc2(hidden), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss, hidden * 2


def _run(fn, optimizer: str, exact: bool, steps: int = 6) -> object:
    """`steps` steps eagerly and through jitlab.jit (aot_eager): every result, parameter and optimizer
    state compared; at most 2 captures (momentum buffers and Adam's state exist from the second
    step on), every later step a hit. Returns the explain()."""
    torch.manual_seed(0)
    models = [NormModel()]
    models.append(copy.deepcopy(models[0]))
    opts = [OPTIMIZERS[optimizer](m.parameters()) for m in models]
    jitted = jit(fn, backend="aot_eager")
    for i in range(steps):
        g = torch.Generator().manual_seed(i)
        x, y = torch.randn(5, 6, generator=g), torch.randn(5, 3, generator=g)
        expected, got = fn(models[0], opts[0], x, y), jitted(models[1], opts[1], x, y)
        pairs = list(zip(torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(got)))
        pairs += list(zip(models[0].parameters(), models[1].parameters()))
        pairs += list(zip(state_tensors(opts[0]), state_tensors(opts[1]), strict=True))
        for k, (a, b) in enumerate(pairs):
            if exact:
                assert torch.equal(a, b), f"step {i}, value {k}: {(a - b).abs().max().item()}"
            else:
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=f"step {i}, value {k}")
    report = jitted.explain()
    assert report.captures <= 2 and not report.fallbacks, report
    assert sum(g.hits for g in report.graphs) == steps - report.captures, report
    return report


def test_a_conversion_returning_the_parameter_keeps_the_forward_compiled():
    report = _run(step, "sgd-momentum", exact=True)
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]


def test_the_same_with_adamw():
    report = _run(step, "adamw", exact=False)
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]


def test_a_part_left_uncompiled_is_said_in_explain():
    report = _run(step_keeping_hidden, "sgd-momentum", exact=True)
    for note in [g.backend_note for g in report.graphs]:
        assert note is not None and "runs uncompiled" in note and "require grad" in note, note
    assert "runs uncompiled" in str(report)
