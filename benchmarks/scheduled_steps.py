"""Training steps whose learning rate changes on every call, under jitlab.jit with a backend, compared
with eager after every step.

    python benchmarks/scheduled_steps.py --backends aot_eager,inductor
    python benchmarks/scheduled_steps.py --backends aot_eager --optimizers adam --schedules OneCycleLR

A small MLP (6 -> 16 -> 3, tanh, `mse_loss`) is built twice with the same weights; each step
(`loss.backward(); opt.step(); opt.zero_grad()`) runs `--steps` times on fresh batches, eagerly on
one copy and under `jitlab.jit(step, backend=...)` on the other, with the scheduler's `step()`
inside the jitted step ("in") or after it ("out"); `param_groups` sets `group["lr"] = 0.1 / (i + 1)`
by hand before each step. Every loss, parameter and optimizer state tensor is compared after each
step: a row gives the captures, the hits, the calls that ran eagerly, whether every value was
bitwise eager's, the largest difference, and how many graphs ran uncompiled (a backend note).
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit import jit

OPTIMIZERS: dict[str, Callable[[Any], torch.optim.Optimizer]] = {
    "sgd-momentum": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
    "sgd-momentum-foreach": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, foreach=True),
    "adam": lambda ps: torch.optim.Adam(ps, lr=0.01),
    "adam-foreach": lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=True),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
    "adamw-foreach": lambda ps: torch.optim.AdamW(ps, lr=0.01, foreach=True),
}
SCHEDULES: dict[str, Callable[[Any], Any] | None] = {
    "StepLR": lambda o: torch.optim.lr_scheduler.StepLR(o, 1, 0.9),
    "CosineAnnealingLR": lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 10),
    "LambdaLR": lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda s: 1 / (1 + s)),
    "OneCycleLR": lambda o: torch.optim.lr_scheduler.OneCycleLR(o, 0.1, total_steps=40),
    "warmup": lambda o: torch.optim.lr_scheduler.LinearLR(o, 0.1, 1.0, total_iters=8),
    "param_groups": None,
}


def step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def scheduled_step(
    model: nn.Module, opt: torch.optim.Optimizer, sched: Any, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    loss = step(model, opt, x, y)
    sched.step()
    return loss


def state_tensors(opt: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)]


def run(backend: str, optimizer: str, schedule: str, inside: bool, steps: int) -> dict[str, Any]:
    """One arrangement: the eager copy against the jitted one, compared after every step."""
    torch.manual_seed(0)
    models = [nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))]
    models.append(copy.deepcopy(models[0]))
    opts = [OPTIMIZERS[optimizer](m.parameters()) for m in models]
    make = SCHEDULES[schedule]
    scheds = [make(o) for o in opts] if make is not None else None
    fn = scheduled_step if inside else step
    jitted = jit(fn, backend=backend)
    worst, exact = 0.0, True
    for i in range(steps):
        g = torch.Generator().manual_seed(i)
        x, y = torch.randn(5, 6, generator=g), torch.randn(5, 3, generator=g)
        if scheds is None:
            for opt in opts:
                for group in opt.param_groups:
                    group["lr"] = 0.1 / (i + 1)
        extra = (scheds[0],) if inside else ()
        mine = (scheds[1],) if inside else ()
        pairs = [(fn(models[0], opts[0], *extra, x, y), jitted(models[1], opts[1], *mine, x, y))]
        if not inside:
            for sched in scheds or ():
                sched.step()
        pairs += list(zip(models[0].parameters(), models[1].parameters()))
        pairs += list(zip(state_tensors(opts[0]), state_tensors(opts[1]), strict=True))
        for a, b in pairs:
            if not torch.equal(a, b):
                exact = False
                worst = max(worst, (a - b).abs().max().item())
    report = jitted.explain()
    return {
        "captures": report.captures,
        "hits": sum(g.hits for g in report.graphs),
        "eager": len(report.fallbacks),
        "bitwise": exact,
        "largest_difference": worst,
        "uncompiled": sum(1 for g in report.graphs if g.backend_note),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="aot_eager")
    parser.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    parser.add_argument("--schedules", default=",".join(SCHEDULES))
    parser.add_argument("--where", default="out,in", help="the scheduler's step: out (after the step), in")
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args(argv)
    for backend in args.backends.split(","):
        for optimizer in args.optimizers.split(","):
            for schedule in args.schedules.split(","):
                for where in args.where.split(","):
                    if where == "in" and SCHEDULES[schedule] is None:
                        continue
                    row = run(backend, optimizer, schedule, where == "in", args.steps)
                    cells = "  ".join(
                        f"{k} {v:.1e}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()
                    )
                    print(f"{backend:10s} {optimizer:21s} {schedule:18s} {where:3s}  {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
