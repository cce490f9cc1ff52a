"""A training step scaling its loss by an int read from tensor data, under jitlab.jit with each
backend, compared with eager after every step: how many captures a changing int costs.

    python benchmarks/data_int_steps.py --backends eager,aot_eager,inductor

`nn.Linear(4, 3)` is built twice with the same weights; the step computes `y = model(x)`,
`n = int((y > 0).sum().item())` and `loss = mse(y, t) * (1 + n)`, then `loss.backward()`,
`opt.step()` (SGD, lr 0.05) and `opt.zero_grad()`, `--steps` times on fresh batches (n changes),
eagerly on one copy and under `jitlab.jit(step, backend=...)` on the other. A row gives the captures,
the hits, the largest difference of the loss and the parameters from eager's, and how many graphs
ran uncompiled (a backend note). With compiling backends the int stays in the compiled graph as an
unbacked SymInt (jitlab/jit/graph/compiled_ints.py); it was re-checked by value, a capture per value.
"""

from __future__ import annotations

import argparse
import copy
import sys

import torch
import torch.nn as nn

from jitlab.jit import jit


def step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    y = model(x)
    n = int((y > 0).sum().item())
    loss = nn.functional.mse_loss(y, t) * (1 + n)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.detach()


def run(backend: str, steps: int) -> dict[str, object]:
    """The step eagerly and jitted, `steps` times; the row of counts and differences."""
    torch.manual_seed(0)
    models = [nn.Linear(4, 3)]
    models.append(copy.deepcopy(models[0]))
    opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in models]
    jitted = jit(step, backend=backend)
    worst, counts = 0.0, set()
    for i in range(steps):
        g = torch.Generator().manual_seed(i)
        x, t = torch.randn(5, 4, generator=g), torch.randn(5, 3, generator=g)
        counts.add(int((models[0](x) > 0).sum()))
        pairs = [(step(models[0], opts[0], x, t), jitted(models[1], opts[1], x, t))]
        pairs += list(zip(models[0].parameters(), models[1].parameters()))
        worst = max([worst, *((a - b).abs().max().item() for a, b in pairs)])
    report = jitted.explain()
    return {
        "backend": backend,
        "values of n": len(counts),
        "captures": report.captures,
        "hits": sum(g.hits for g in report.graphs),
        "largest difference": worst,
        "uncompiled graphs": sum(g.backend_note is not None for g in report.graphs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="eager,aot_eager", help="comma-separated jitlab.jit backends")
    parser.add_argument("--steps", type=int, default=12, help="training steps per backend")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, not {args.steps}")
    for backend in args.backends.split(","):
        row = run(backend.strip(), args.steps)
        print("  ".join(f"{k}: {v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
