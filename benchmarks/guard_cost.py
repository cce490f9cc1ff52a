"""Per-call cost of jitlab.jit and torch.compile around the graph, on models of the model zoo.

Run: `python benchmarks/guard_cost.py [--models timm_mobilenetv2_100 tv_resnet18 hf_Bert ...] [--rounds 30]`
(`pip install -e .[zoo]`; the image models need Python 3.12 or 3.13, where the registry's
torchvision loads, the transformers models load on 3.11 too).

On a model of hundreds of modules and parameters, what a cache hit costs besides the graph (guards,
gathering the graph's inputs, the wrappers) is hundreds of microseconds, a few percent of a small
model's call on the CPU: enough to decide which of the two is faster with Inductor. To time it alone,
both compile with a backend whose graph returns the outputs of its last real run, so a call is the
guards and wrappers only. The two are timed in alternation (blocks of 200 calls, the order swapped
every round) and the median and minimum per call printed, with the entry's guard count.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from jit_overhead import replaying_backend  # run as a script: benchmarks/ is on sys.path

DEFAULT_MODELS = ("tv_resnet18", "timm_mobilenetv2_100", "timm_efficientnet_b0", "timm_deit_tiny_patch16_224")


def _block(fn: Callable[..., Any], args: tuple, kwargs: dict, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args, **kwargs)
    return (time.perf_counter() - start) / calls


def measure(case: Any, rounds: int) -> dict[str, Any]:
    """Microseconds per call around the graph for one zoo case, jitlab.jit against torch.compile."""
    from jitlab.jit import jit

    replay = [False]
    args, kwargs = case.build_inputs(0)
    jitted = jit(case.build_model(), backend=replaying_backend(replay))
    compiled = torch.compile(case.build_model(), backend=replaying_backend(replay))
    for fn in (jitted, compiled):
        for _ in range(3):
            fn(*args, **kwargs)
    replay[0] = True
    samples: dict[str, list[float]] = {"jitlab": [], "compile": []}
    for n in range(rounds):
        order = [("jitlab", jitted), ("compile", compiled)]
        for name, fn in order if n % 2 else order[::-1]:
            samples[name].append(_block(fn, args, kwargs, 200))
    report = jitted.explain()
    result: dict[str, Any] = {
        "graphs": len(report.graphs),
        "guards": sum(len(e.guards) for e in jitted.entries),
    }
    for name, values in samples.items():
        result[name] = (statistics.median(values) * 1e6, min(values) * 1e6)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), help="zoo case names")
    parser.add_argument("--rounds", type=int, default=30, help="rounds of alternated blocks")
    options = parser.parse_args()
    warnings.simplefilter("ignore")
    cases = {}
    for zoo in ("torchvision_zoo", "timm_zoo", "transformers_zoo"):
        try:
            module = importlib.import_module(f"jitlab.capture.zoo.{zoo}")
        except Exception as exc:  # a library missing or not loading here: its models are not offered
            print(f"({zoo}: not available here: {type(exc).__name__}: {exc})")
            continue
        cases.update((c.name, c) for c in module.CORPUS.cases)
    unknown = [m for m in options.models if m not in cases]
    if unknown:
        raise SystemExit(f"unknown zoo case(s) {', '.join(unknown)}: choose from {', '.join(sorted(cases))}")
    print(f"{'model':32s} {'guards':>7s} {'jitlab.jit µs':>15s} {'torch.compile µs':>17s}  (median, min)")
    for name in options.models:
        r = measure(cases[name], options.rounds)
        j, c = r["jitlab"], r["compile"]
        print(f"{name:32s} {r['guards']:7d} {j[0]:8.1f} {j[1]:6.1f} {c[0]:9.1f} {c[1]:6.1f}")


if __name__ == "__main__":
    main()
