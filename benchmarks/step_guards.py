"""What a hit of `jitlab.jit(step)` spends on its guards, for training steps of the transformers zoo.

Run: `python benchmarks/step_guards.py [--models PLBartForConditionalGeneration BertForMaskedLM ...]`
(`pip install -e .[zoo]`).

A whole training step's entry guards the model, the optimizer and its state: on PLBart, about 1,600
guards over some 370 tensors, checked on every step. This captures each model's step (AdamW, backend
"aot_eager", three steps), takes the guard part of the entry's generated code and times it on the
captured arguments: whole, its generated Python lines alone (without the two checks below), the
shared-memory check (which inputs share storage) alone and torch's `TensorGuards` (the tensors'
metadata) alone, each on the arguments the guard code hands it. Each part is timed on its own, in
alternation, 5 rounds of 300 calls, the minimum of each in µs per call: no figure is a difference
of two timings, which a busy machine can make negative. Compare builds by running this in
alternation, as the VM drifts.
"""

from __future__ import annotations

import argparse
import re
import timeit
import warnings
from collections.abc import Callable
from typing import Any

from jitlab.capture.train_steps import make_optimizer
from jitlab.capture.train_worker import STEPS
from jitlab.capture.zoo import transformers_zoo, workloads
from jitlab.engine import load
from jitlab.errors import UserError

DEFAULT_MODELS = ("PLBartForConditionalGeneration", "BertForMaskedLM", "T5Small")


def guard_function(source: str, namespace: dict[str, Any], leave_out: tuple[str, ...]) -> Callable[..., Any]:
    """The entry's guard checks alone (its code up to the graph call), without the lines that
    contain any of `leave_out`: returns None where the entry would run its graph."""
    lines = source.splitlines()
    end = next(i for i, line in enumerate(lines) if line.strip() == "except Exception:")
    kept = [line for line in lines[:end] if not any(part in line for part in leave_out)]
    code = "\n".join([*kept, "    except Exception:", "        return MISS", "    return None"])
    scope = dict(namespace)
    exec(compile(code, "<guards>", "exec"), scope)  # noqa: S102 -- jitlab's own generated code
    return scope["entry"]


def checks_called(source: str, namespace: dict[str, Any], args: tuple) -> dict[str, tuple]:
    """The arguments the guard code hands its shared-memory check and `TensorGuards` on a hit
    (`MEMORY<n>(...)`, `TG<n>(...)`): run once with each replaced by a recorder."""
    found: dict[str, tuple] = {}
    scope = dict(namespace)
    for name in re.findall(r"\b((?:MEMORY|TG)\d+)\(", source):
        check = namespace[name]

        def recorder(*tensors: Any, _name: str = name, _check: Callable[..., Any] = check) -> Any:
            found[_name] = tensors
            return _check(*tensors)

        scope[name] = recorder
    if guard_function(source, scope, ())(args, {}) is not None:
        raise UserError("the step's entry does not hit on the captured arguments")
    return found


def per_call_us(calls: dict[str, Callable[[], Any]], rounds: int = 5, number: int = 300) -> dict[str, float]:
    """µs per call of each, timed in alternation, `rounds` times: the minimum of each. Every part is
    timed on its own (none is a difference of two timings, which a busy machine can make negative)."""
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            best[name] = min(best[name], timeit.timeit(call, number=number) / number * 1e6)
    return best


def measure(name: str) -> dict[str, Any]:
    import jitlab

    cases = {case.name: case for case in transformers_zoo.CORPUS.cases}
    if name not in cases:
        raise UserError(f"no transformers zoo model named {name!r}; one of: {', '.join(sorted(cases))}")
    case = cases[name]
    model = workloads.train_model(case)
    optimizer = make_optimizer("adamw", model)
    batches = workloads.train_batches(case, 3)
    jitted = jitlab.jit(STEPS[workloads.loss_kind(case)], backend="aot_eager")
    for batch in batches:
        jitted(model, optimizer, batch)
    entry = jitted.entries[0]
    namespace = entry.fn.__globals__
    args = (model, optimizer, batches[0])
    whole = guard_function(entry.source, namespace, ())
    if whole(args, {}) is not None:
        raise UserError(f"{name}: the step's entry does not hit on the captured arguments")
    python_only = guard_function(entry.source, namespace, ("MEMORY", "if not TG"))
    checks = checks_called(entry.source, namespace, args)
    memory = [(namespace[n], called) for n, called in checks.items() if n.startswith("MEMORY")]
    tensors = [(namespace[n], called) for n, called in checks.items() if n.startswith("TG")]
    calls = {
        "total_us": lambda: whole(args, {}),
        "python_us": lambda: python_only(args, {}),
        "memory_us": lambda: [check(*called) for check, called in memory],
        "tensor_guards_us": lambda: [check(*called) for check, called in tensors],
    }
    before = load.snapshot()
    times = per_call_us(calls)
    spell = load.load_between(before, load.snapshot())
    return {"guards": len(entry.guards), **times, "busy": spell.phrase() if spell.busy else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    print(f"{'model':<36} {'guards':>7} {'total µs':>9} {'python':>7} {'memory':>7} {'tensors':>8}")
    for name in args.models:
        row = measure(name)
        print(
            f"{name:<36} {row['guards']:>7} {row['total_us']:>9.1f} {row['python_us']:>7.1f} "
            f"{row['memory_us']:>7.1f} {row['tensor_guards_us']:>8.1f}"
        )
        if row["busy"]:
            print(f"  measured in a busy spell ({row['busy']}): these times are stretched; run again quiet")


if __name__ == "__main__":
    try:
        main()
    except UserError as exc:
        raise SystemExit(f"error: {exc}") from None
