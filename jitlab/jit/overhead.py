"""Measure the per-call overhead of jitlab.jit on a small module, where the call around the graph
is most of the cost.

Run: `python -m jitlab.jit.overhead [--compile] [--backend NAME] [--rounds N] [--number N]`, from
any install. Prints microseconds per call for eager, the captured graph called directly, jitlab.jit,
the guard check alone, jitlab.jit with a graph that returns its last outputs (what a hit costs around
the graph, measured as one time rather than as the difference of two noisy ones), and (with
--compile) torch.compile. Timings are the best of `--rounds` rounds (40) of `--number` calls (2000),
the candidates measured in alternation so that the noise of a shared machine hits all of them alike.
(jitlab.capture's calibrated timer is not used: capture sits above the JIT and imports it.)
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.frontend.api import jit


class SmallModule(nn.Module):
    """Linear 8x8, relu, times a Python float attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) * self.scale


def replaying_backend(replay: list[bool]) -> Callable[..., Any]:
    """A backend whose compiled graph runs for real until `replay[0]` is set, then returns the
    outputs of its last real run: a call then costs what surrounds the graph, nothing else."""

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        last: list[Any] = []

        def run(*inputs: object) -> Any:
            if replay[0]:
                return last[0]
            out = gm.forward(*inputs)
            last[:] = [out]
            return out

        return run

    return backend


def _interleaved(candidates: dict[str, Callable[[], Any]], number: int, rounds: int) -> dict[str, float]:
    """Best time per call of each candidate in µs, measured in alternation (the machine is shared)."""
    best = {name: float("inf") for name in candidates}
    for fn in candidates.values():
        fn()
    for _ in range(rounds):
        for name, fn in candidates.items():
            best[name] = min(best[name], timeit.timeit(fn, number=number) / number * 1e6)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jitlab.jit.overhead", description=__doc__)
    parser.add_argument("--compile", action="store_true", help="also time torch.compile (slow to build)")
    parser.add_argument("--backend", default="eager", help="backend of both JITs (default: eager)")
    parser.add_argument("--rounds", type=int, default=40, help="rounds of alternation (default: 40)")
    parser.add_argument(
        "--number", type=int, default=2000, help="calls per candidate and round (default: 2000)"
    )
    opts = parser.parse_args(argv)
    if opts.rounds < 1 or opts.number < 1:
        parser.error("--rounds and --number must be at least 1")
    torch.set_num_threads(1)
    module = SmallModule()
    x = torch.randn(4, 8)
    jitted = jit(module, backend=opts.backend)
    jitted(x)
    jitted(x)
    entry = jitted.entries[0]
    graph = entry.fn.__globals__["GRAPH"]
    params = (module.fc.weight, module.fc.bias)
    marker = "    outs = GRAPH"  # where the entry's generated code stops checking and calls the graph
    if marker not in entry.source:
        raise SystemExit(
            f"jitlab.jit.overhead: the generated entry has no line {marker.strip()!r}; its guard check cannot be timed alone"
        )
    guard_src = entry.source.split(marker)[0] + "    return None\n"
    ns = dict(entry.fn.__globals__)
    exec(guard_src, ns)  # noqa: S102 - the entry's own guard statements, without the graph call
    guard_only = ns["entry"]
    replay = [False]
    around = jit(module, backend=replaying_backend(replay))
    around(x)
    around(x)
    replay[0] = True
    candidates = {
        "eager module call": lambda: module(x),
        "captured graph called directly": lambda: graph(x, *params),
        "jitlab.jit call": lambda: jitted(x),
        "guard check alone": lambda: guard_only((x,), {}),
        "jitlab.jit call, graph replayed": lambda: around(x),
    }
    if opts.compile:
        compiled = torch.compile(module, backend=opts.backend)
        compiled(x)
        candidates["torch.compile call"] = lambda: compiled(x)
    rows = _interleaved(candidates, number=opts.number, rounds=opts.rounds)
    for name, value in rows.items():
        print(f"{name:34s} {value:8.2f} us")
    print(
        f"{'jitlab.jit overhead over the graph':34s} {rows['jitlab.jit call'] - rows['captured graph called directly']:8.2f} us"
        "  (difference of two times)"
    )
    print(f"guards: {len(entry.guards)}")


if __name__ == "__main__":
    main()
