"""What a hit of `jitlab.jit(step)` spends on its guards, for training steps of the transformers zoo.

Run: `python benchmarks/step_guards.py [--models PLBartForConditionalGeneration BertForMaskedLM ...]`
(`pip install -e .[zoo]`).

A whole training step's entry guards the model, the optimizer and its state: on PLBart, about 1,600
guards over some 370 tensors, checked on every step. This captures each model's step (AdamW, backend
"aot_eager", three steps), takes the guard part of the entry's generated code and times it on the
captured arguments three ways: whole, without the shared-memory check (which inputs share
storage), and also without torch's `TensorGuards` (the tensors' metadata). The differences are
what those two cost; the rest is the generated Python lines. Minimum over 5 repeats of 300 calls,
in µs per call; compare builds by running this in alternation, as the VM drifts.
"""

from __future__ import annotations

import argparse
import timeit
import warnings
from collections.abc import Callable
from typing import Any

from jitlab.capture.train_steps import make_optimizer
from jitlab.capture.train_worker import STEPS
from jitlab.capture.zoo import transformers_zoo, workloads
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


def per_call_us(check: Callable[..., Any], args: tuple) -> float:
    return min(timeit.repeat(lambda: check(args, {}), number=300, repeat=5)) / 300 * 1e6


def measure(name: str) -> dict[str, float | int]:
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
    no_memory = guard_function(entry.source, namespace, ("MEMORY",))
    python_only = guard_function(entry.source, namespace, ("MEMORY", "if not TG"))
    total, without_memory, python = (per_call_us(f, args) for f in (whole, no_memory, python_only))
    return {
        "guards": len(entry.guards),
        "total_us": total,
        "memory_us": total - without_memory,
        "tensor_guards_us": without_memory - python,
        "python_us": python,
    }


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


if __name__ == "__main__":
    try:
        main()
    except UserError as exc:
        raise SystemExit(f"error: {exc}") from None
