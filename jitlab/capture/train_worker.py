"""Worker process of `jitlab capture --zoo --train`: a few training steps of a zoo model, arranged
five ways, each against eager.

    python -m jitlab.capture.train_worker JOB.json EVENTS.jsonl

JOB.json holds {"corpora": [zoo files], "items": [[case, [arrangements]], ...], "backend": "eager",
"budget": 0.5, "optimizer": "adamw", "steps": 5, "device": "cpu", "amp": false} ("amp": the
mixed-precision steps, train_steps.AMP_STEPS). It speaks the capture worker's event protocol, so
the capture harness drives it with its time limits and crash recovery.

Per case, one model is built for training (`workloads.train_model`: dropout 0, training mode) and
every arrangement trains its own deep copy, so all start from identical weights, with its own
optimizer, on the same batches (`workloads.train_batches`, one per step):

| arrangement | what runs a step |
| --- | --- |
| `eager` | `step(model, opt, batch)`: the reference (run twice: eager must repeat itself) |
| `jit_step` | `jitlab.jit(step)(model, opt, batch)` |
| `jit_model` | `step(jitlab.jit(model), opt, batch)`: backward and optimizer outside |
| `compile_model` | `step(torch.compile(model), opt, batch)` |
| `compile_step` | `torch.compile(step)(model, opt, batch)` |
| `compile_model_opt` | `torch.compile(model)`, and `opt.step` replaced by `torch.compile(opt.step)` |

After every step, the loss and every parameter and buffer are compared with eager's after the same
step: bitwise, and the largest absolute difference. The first step is timed with the wrapping
(`first_step_s`: capture and compile included, from a cold compile cache), and the first two
steps (`first_two_steps_s`: jitlab.jit's graphs run first in the second). Counts: jitlab.jit's
captures, graph breaks and fallbacks from `.explain()`; TorchDynamo's graphs from `CountingBackend`
(one per arrangement), its graph breaks from its counters, its recompile-limit fallbacks from its
log. Then every arrangement's step is timed in alternation (`speed_worker.measure_interleaved`) on
the first batch, each arrangement still training its own copy, the same number of steps per block
for all, and at least 20 ms of them.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import torch

from jitlab.backends.sync import block_until_done
from jitlab.capture.compare import difference
from jitlab.capture.compile_counts import BreakCounter, CountingBackend, RecompileLimits, jit_counts
from jitlab.capture.corpus import Case
from jitlab.capture.devices import to_device
from jitlab.capture.speed_worker import cold_caches, time_in_rounds, warm_up
from jitlab.capture.train_steps import AMP_STEPS, STEPS, OptimizerWithCompiledStep, make_optimizer
from jitlab.capture.worker import CaseRunner, failure_event, one_line, seed_call, serve_job, worker_entry
from jitlab.capture.zoo import workloads
from jitlab.engine.spec import TimingPolicy

ARRANGEMENTS = ("eager", "jit_step", "jit_model", "compile_model", "compile_step", "compile_model_opt")

State = dict[str, torch.Tensor]


class Arrangement:
    """One arrangement's copy of the model, its optimizer and the callable that makes one step."""

    def __init__(
        self, name: str, base: torch.nn.Module, step: Callable, optimizer: str, backend: str
    ) -> None:
        self.name = name
        self.model = copy.deepcopy(base)
        self.opt = make_optimizer(optimizer, self.model)
        self.jitted: Any = None
        self.backend: CountingBackend | None = None
        self.breaks = BreakCounter()
        model, opt = self.model, self.opt
        if name in ("jit_step", "jit_model"):
            from jitlab.jit import jit

            if name == "jit_step":
                self.jitted = jit(step, backend=backend)
                self.call = lambda batch: self.jitted(model, opt, batch)
            else:
                self.jitted = jit(model, backend=backend)
                self.call = lambda batch: step(self.jitted, opt, batch)
        elif name.startswith("compile_"):
            self.backend = CountingBackend(backend)
            self.breaks.start()
            if name == "compile_step":
                compiled_step = torch.compile(step, backend=self.backend)
                self.call = lambda batch: compiled_step(model, opt, batch)
            else:
                compiled = torch.compile(model, backend=self.backend)
                if name == "compile_model_opt":
                    opt = OptimizerWithCompiledStep(opt, torch.compile(opt.step, backend=self.backend))
                self.call = lambda batch: step(compiled, opt, batch)
        elif name == "eager":
            self.call = lambda batch: step(model, opt, batch)
        else:
            raise ValueError(f"unknown arrangement {name!r}: choose from {', '.join(ARRANGEMENTS)}")

    def state(self) -> State:
        """Every parameter and buffer, copied."""
        named = [*self.model.named_parameters(), *self.model.named_buffers()]
        return {name: value.detach().clone() for name, value in named}

    def counts(self) -> dict[str, Any]:
        if self.jitted is not None:
            return jit_counts(self.jitted)
        if self.backend is not None:
            breaks, reasons = self.breaks.since()
            return {
                "graphs": self.backend.graphs,
                "ops": self.backend.ops,
                "breaks": breaks,
                "break_reasons": reasons,
            }
        return {}


def train(
    arrangement: Arrangement, batches: list[dict[str, Any]]
) -> tuple[list[torch.Tensor], list[State], list[float]]:
    """Every step once: the losses, the state after each step, and the seconds of the first two
    steps (wrapping excluded: the caller adds it). The second counts too: jitlab.jit's first step
    runs the capture, so its compiled graphs, and the backward AOTAutograd compiles lazily, run first
    in the second step, where torch.compile's already ran in the first."""
    losses, states, seconds = [], [], []
    for index, batch in enumerate(batches):
        seed_call(index)
        started = time.perf_counter()
        loss = arrangement.call(batch)
        block_until_done(loss)
        if index < 2:
            seconds.append(time.perf_counter() - started)
        losses.append(loss.detach().clone())
        states.append(arrangement.state())
    return losses, states, seconds


def _max_difference(expected: torch.Tensor, actual: torch.Tensor | None) -> float:
    if actual is None or expected.shape != actual.shape or expected.dtype != actual.dtype:
        return float("inf")
    if not expected.is_floating_point():
        return 0.0 if torch.equal(expected, actual) else float("inf")
    return float((expected - actual).abs().max()) if expected.numel() else 0.0


def _close(expected: torch.Tensor, actual: torch.Tensor | None) -> bool:
    """Equal within the tolerance capture compares outputs with (`compare.difference`)."""
    return actual is not None and difference(expected, actual) is None


def against_eager(reference: tuple[list, list], run: tuple[list, list]) -> dict[str, Any]:
    """Losses and states after every step against eager's: bitwise on how many steps, equal within
    capture's tolerance (`equal`), the largest differences, and the first value not bitwise equal."""
    result: dict[str, Any] = {"bitwise_steps": 0, "max_loss_diff": 0.0, "max_param_diff": 0.0, "equal": True}
    first = None
    for index, (loss_e, loss_r, state_e, state_r) in enumerate(
        zip(reference[0], run[0], reference[1], run[1])
    ):
        pairs = [
            ("loss", loss_e, loss_r),
            *((name, value, state_r.get(name)) for name, value in state_e.items()),
        ]
        bitwise = True
        for name, expected, actual in pairs:
            diff = _max_difference(expected, actual)
            key = "max_loss_diff" if name == "loss" else "max_param_diff"
            result[key] = max(result[key], diff)
            result["equal"] = result["equal"] and _close(expected, actual)
            if actual is None or not torch.equal(expected, actual):
                bitwise = False
                if first is None:
                    first = f"step {index + 1}: {name} differs by {diff:.3g}"
        result["bitwise_steps"] += bitwise
    result["bitwise"] = result["bitwise_steps"] == len(reference[0])
    if first is not None:
        result["first_difference"] = first
    return result


def run_arrangement(
    name: str, base: torch.nn.Module, step: Callable, batches: list, job: dict[str, Any]
) -> tuple[Arrangement, dict[str, Any], tuple[list, list]]:
    """Wrap a deep copy of `base` as `name`, train it, and say what it did (comparison aside)."""
    with cold_caches("eager" if name == "eager" else "compiled"), RecompileLimits() as limits:
        started = time.perf_counter()
        arrangement = Arrangement(name, base, step, job["optimizer"], job["backend"])
        wrapping = time.perf_counter() - started
        losses, states, seconds = train(arrangement, batches)
    result: dict[str, Any] = {
        "error": None,
        "first_step_s": wrapping + seconds[0],
        "first_two_steps_s": wrapping + sum(seconds) if len(seconds) == 2 else None,
        "losses": [float(x) for x in losses],
    }
    result.update(arrangement.counts())
    if arrangement.backend is not None:
        result.update(fallback=bool(limits.messages), fallback_reasons=limits.messages)
    return arrangement, result, (losses, states)


def run_case(
    case: Case, arrangements: list[str], job: dict[str, Any], policy: TimingPolicy, emit: Any
) -> None:
    """Eager (twice: the reference, and whether it repeats itself), then each arrangement; then all
    of them timed in alternation. An arrangement that fails is reported at once, the others go on."""
    emit({"event": "start", "case": case.name, "method": "eager"})
    try:
        import torch._dynamo

        torch._dynamo.reset()
        device = job.get("device", "cpu")
        base = to_device(workloads.train_model(case), device)
        step = (AMP_STEPS if job.get("amp") else STEPS)[workloads.loss_kind(case)]
        batches = to_device(workloads.train_batches(case, int(job["steps"])), device)
        eager, eager_result, reference = run_arrangement("eager", base, step, batches, job)
        _, _, again = run_arrangement("eager", base, step, batches, job)
    except Exception as exc:
        error = f"eager run failed: {one_line(exc)}"
        for name in arrangements:
            emit({"event": "done", "case": case.name, "method": name, "result": _broken(error)})
        return
    repeats = against_eager(reference, again)
    eager_result.update(  # the reference: equal to itself; whether it repeats itself is the check
        equal=True, bitwise=True, bitwise_steps=len(batches), max_loss_diff=0.0, max_param_diff=0.0,
        eager_repeats=repeats["bitwise"], loss=workloads.loss_kind(case), steps=len(batches),
    )  # fmt: skip
    if not repeats["bitwise"]:
        eager_result["eager_difference"] = repeats.get("first_difference")
    ready: dict[str, tuple[Arrangement, dict[str, Any]]] = {"eager": (eager, eager_result)}
    for name in arrangements:
        if name == "eager":
            continue
        emit({"event": "start", "case": case.name, "method": name})
        try:
            arrangement, result, run = run_arrangement(name, base, step, batches, job)
            result.update(against_eager(reference, run))
            ready[name] = (arrangement, result)
        except Exception as exc:  # the arrangement failed on this model: that is the measurement
            emit(failure_event(case.name, name, exc))
    del reference, again
    timed = {name: (lambda a=a: a.call(batches[0])) for name, (a, _) in ready.items()}
    timings = time_in_rounds(case.name, timed, {n: r for n, (_, r) in ready.items()}, policy, emit)
    if timings is None:
        return
    for name, (arrangement, result) in ready.items():
        result = {**result, **timings[name], "per_step_s": timings[name]["median_s"]}
        if arrangement.jitted is not None:  # after the timed steps too: a fallback during timing shows here
            after = jit_counts(arrangement.jitted)
            result["after_timing"] = {k: after[k] for k in ("captures", "hits", "fallback")}
        emit({"event": "done", "case": case.name, "method": name, "result": result})


def _broken(error: str) -> dict[str, Any]:
    return {"equal": None, "error": error, "broken_case": True}


def _start(job: dict[str, Any]) -> CaseRunner:
    # blocks of at least 20 ms: several steps each, so that the first step of a block, slower right
    # after another arrangement's block, does not stand for the steady state of a training loop
    policy = TimingPolicy(budget_s=float(job["budget"]), min_block_s=0.02, min_samples=5, target_ci=0.03)
    methods = {a for _, names in job["items"] for a in names}
    warm_up(
        sorted(
            {"jitlab" for a in methods if a.startswith("jit_")}
            | {"compile" for a in methods if a.startswith("compile_")}
        ),
        job["backend"],
        job.get("device", "cpu"),
    )
    return lambda case, names, emit: run_case(case, names, job, policy, emit)


def main(argv: list[str]) -> int:
    return serve_job(argv, _start)


if __name__ == "__main__":
    worker_entry(main)
