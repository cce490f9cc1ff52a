"""Per-call cost of jitlab.jit and torch.compile around the graph, on models of the model zoo.

Run: `python benchmarks/guard_cost.py [--models timm_mobilenetv2_100 tv_resnet18 BertForMaskedLM ...] [--budget 2]`
(`pip install -e .[zoo]`; the image models need Python 3.12 or 3.13, where the registry's
torchvision loads, the transformers models load on 3.11 too).

On a model of hundreds of modules and parameters, what a cache hit costs besides the graph (guards,
gathering the graph's inputs, the wrappers) is hundreds of microseconds, a few percent of a small
model's call on the CPU: enough to decide which of the two is faster with Inductor. To time it alone,
both compile with a backend whose graph returns the outputs of its last real run, so a call is the
guards and wrappers only. The two are timed in alternation by `jitlab capture --speed`'s own timer
(`measure_interleaved`: calibrated blocks, a rotating order, until the 95% CI of each median is
within 2% or the budget is spent); the median and its interval are printed, with the entry's guards.

torch.compile is timed twice: as it comes, and with `torch._dynamo.config.skip_nnmodule_hook_guards`
off. By default TorchDynamo does not guard the hooks of the modules it inlines, so a forward hook
registered after the first call is silently not run (its documented trade-off); jitlab.jit checks
every called module's four hook tables on each hit, which is the like-for-like comparison.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import torch

from jitlab.capture.corpus import Case, load_corpus
from jitlab.capture.speed_worker import measure_interleaved
from jitlab.capture.zoo import ZOOS, zoo_paths
from jitlab.engine.spec import TimingPolicy
from jitlab.errors import UserError
from jitlab.jit.overhead import replaying_backend

DEFAULT_MODELS = ("tv_resnet18", "timm_mobilenetv2_100", "timm_efficientnet_b0", "timm_deit_tiny_patch16_224")


def available_cases() -> dict[str, Case]:
    """The cases of every zoo whose libraries load here (a note for each that does not)."""
    cases: dict[str, Case] = {}
    for zoo in ZOOS:
        try:
            (path,) = zoo_paths([zoo])
        except UserError as exc:
            print(f"({exc})")
            continue
        cases.update((case.name, case) for case in load_corpus(path))
    return cases


def measure(case: Case, budget_s: float) -> dict[str, Any]:
    """Seconds per call around the graph for one zoo case: jitlab.jit, torch.compile as it comes,
    and torch.compile with its module-hook guards on (`skip_nnmodule_hook_guards=False`)."""
    from jitlab.jit import jit

    replay = [False]
    args, kwargs = case.build_inputs(0)
    jitted = jit(case.build_model(), backend=replaying_backend(replay))
    compiled = torch.compile(case.build_model(), backend=replaying_backend(replay))
    hooked = torch.compile(case.build_model(), backend=replaying_backend(replay))
    for fn in (jitted, compiled, hooked):
        # the guards are built on the first call, under the configuration of that moment
        with torch._dynamo.config.patch(skip_nnmodule_hook_guards=fn is not hooked):
            for _ in range(3):
                fn(*args, **kwargs)
    replay[0] = True
    policy = TimingPolicy(budget_s=budget_s, min_block_s=0.005, min_samples=10)
    timings = measure_interleaved(
        {
            "jitlab": lambda: jitted(*args, **kwargs),
            "compile": lambda: compiled(*args, **kwargs),
            "compile_hooks": lambda: hooked(*args, **kwargs),
        },
        policy,
    )
    return {"guards": sum(len(e.guards) for e in jitted.entries), **timings}


def _us(timing: dict[str, Any]) -> str:
    return (
        f"{timing['median_s'] * 1e6:7.1f} [{timing['ci_low_s'] * 1e6:.1f}, {timing['ci_high_s'] * 1e6:.1f}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), help="zoo case names")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of timing per JIT and model")
    options = parser.parse_args()
    warnings.simplefilter("ignore")
    cases = available_cases()
    unknown = [m for m in options.models if m not in cases]
    if unknown:
        raise SystemExit(f"unknown zoo case(s) {', '.join(unknown)}: choose from {', '.join(sorted(cases))}")
    print(
        f"{'model':32s} {'guards':>6s}  {'jitlab.jit µs (95% CI)':27s} {'torch.compile':27s} "
        "torch.compile, hook guards on"
    )
    for name in options.models:
        r = measure(cases[name], options.budget)
        print(
            f"{name:32s} {r['guards']:6d}  {_us(r['jitlab']):27s} {_us(r['compile']):27s} {_us(r['compile_hooks'])}"
        )


if __name__ == "__main__":
    main()
