"""Differential runs of whole training steps: the same step function, on two identical models and
optimizers, run eagerly and through `jitlab.jit`, compared after every step (the loss, every
parameter, gradient and optimizer state tensor, and the learning rates)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit import jit

OPTIMIZERS: dict[str, Callable[[Any], torch.optim.Optimizer]] = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "sgd-momentum": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
    "sgd-nesterov-foreach": lambda ps: torch.optim.SGD(
        ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=True
    ),
    "adam": lambda ps: torch.optim.Adam(ps, lr=0.01),
    "adam-foreach-amsgrad": lambda ps: torch.optim.Adam(ps, lr=0.01, amsgrad=True, foreach=True),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
    "adamw-foreach": lambda ps: torch.optim.AdamW(ps, lr=0.01, foreach=True),
    # one native kernel for every parameter (torch._fused_adamw_ and the like)
    "adamw-fused": lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, fused=True),
    "adam-fused-amsgrad": lambda ps: torch.optim.Adam(ps, lr=0.01, amsgrad=True, fused=True),
    "sgd-fused-momentum": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, fused=True),
    "adagrad-fused": lambda ps: torch.optim.Adagrad(ps, lr=0.05, fused=True),
}


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 12), nn.Linear(12, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)))


def batch(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + i)
    return torch.randn(5, 6, generator=g), torch.randn(5, 3, generator=g)


def scaled_batch(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`batch(i)` with inputs scaled by 1, 2 or 3: losses and gradients on both sides of a threshold."""
    x, y = batch(i)
    return x * (1 + i % 3), y


def state_tensors(opt: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)]


def assert_same(a: Any, b: Any, exact: bool, what: str) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), what
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, exact, f"{what}[{k}]")
        return
    if a is None or b is None:
        assert a is None and b is None, f"{what}: {a is None} vs {b is None}"
        return
    if exact:
        assert torch.equal(a, b), f"{what} differs: {(a - b).abs().max().item()}"
    else:
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=what)


def run_steps(
    make_step: Callable[..., Callable[..., Any]],
    optimizer: str = "adam",
    steps: int = 6,
    backend: str = "eager",
    make_model: Callable[[], nn.Module] = Mlp,
    make_scheduler: Callable[[Any], Any] | None = None,
    arguments: Callable[[int], tuple] = batch,
    exact: bool | None = None,
) -> Any:
    """Run `steps` steps of `make_step(model, opt, sched)` eagerly and jitted; assert equal results
    after each (bitwise with backend "eager", or as `exact` says); return the jitted step."""
    torch.manual_seed(0)
    models = [make_model()]
    models.append(copy.deepcopy(models[0]))
    opts = [OPTIMIZERS[optimizer](m.parameters()) for m in models]
    scheds = [make_scheduler(o) if make_scheduler else None for o in opts]
    eager = make_step(models[0], opts[0], scheds[0])
    jitted = jit(make_step(models[1], opts[1], scheds[1]), backend=backend)
    exact = backend == "eager" if exact is None else exact
    for i in range(steps):
        args = arguments(i)
        expected, got = eager(*args), jitted(*args)
        assert_same(expected, got, exact, f"step {i}: result")
        for (name, p), q in zip(models[0].named_parameters(), models[1].parameters()):
            assert_same(p, q, exact, f"step {i}: parameter {name}")
            assert_same(p.grad, q.grad, exact, f"step {i}: gradient of {name}")
        for a, b in zip(state_tensors(opts[0]), state_tensors(opts[1]), strict=True):
            assert_same(a, b, exact, f"step {i}: optimizer state")
        assert [g["lr"] for g in opts[0].param_groups] == [g["lr"] for g in opts[1].param_groups]
    return jitted


def plain_step(model: nn.Module, opt: torch.optim.Optimizer, sched: Any) -> Callable[..., Any]:
    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


def mse_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The step of issue 45 on a regression model, with the model and optimizer as arguments."""
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss
