"""Worker process of `jitlab capture --zoo --shapes` and `--generate`: zoo models on inputs that vary.

    python -m jitlab.capture.vary_worker JOB.json EVENTS.jsonl

JOB.json holds {"corpora": [zoo files], "items": [[case, ["eager", "jitlab", "compile"]], ...],
"mode": "shapes"|"generate", "backend": "eager", "budget": 0.5, "device": "cpu"}. It speaks the capture worker's event
protocol, so the capture harness drives it with its time limits and crash recovery.

Per case, each method gets a freshly built model (the same weights) and makes the mode's calls in
order (`jitlab.capture.zoo.workloads`): the 10 (batch, length) shapes or 15 image sizes of the shapes
mode, or the 10 `generate` calls of the generation mode.

- `eager`: the model itself, the reference. A shape eager itself rejects (a ViT built for one image
  size) is dropped from the case's calls for every method, with eager's error.
- `jitlab`: `jitlab.jit(model, backend=B)`; for `generate`, `model.forward = jitlab.jit(model.forward)`
  (generate calls the model's forward once per new token). Counts from `.explain()`: captures, hits,
  fallbacks with their reasons.
- `compile`: `torch.compile` in the same places, with `CountingBackend(B)`, which counts the graphs
  TorchDynamo hands the backend (its first graph, its recompiles and graphs after breaks).

Every call's output (every generated token) is compared with eager's. The first pass through the
calls is timed as a whole (`first_pass_s`: captures and compiles included, from a cold compile
cache). Then the methods are timed in alternation (`speed_worker.measure_interleaved`), one block
being every call of the mode once, in order: `per_call_s` is the median block over the number of
calls, `per_token_s` (generation) over the number of tokens generated.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from jitlab.backends.sync import block_until_done
from jitlab.capture.compare import difference, snapshot
from jitlab.capture.compile_counts import BreakCounter, CountingBackend, RecompileLimits, jit_counts
from jitlab.capture.corpus import Case
from jitlab.capture.devices import to_device
from jitlab.capture.speed_worker import cold_caches, time_in_rounds, warm_up
from jitlab.capture.worker import CaseRunner, failure_event, one_line, seed_call, serve_job, worker_entry
from jitlab.capture.zoo import workloads
from jitlab.engine.spec import TimingPolicy

VARY_METHODS = ("eager", "jitlab", "compile")
MODES = ("shapes", "generate")


class Calls:
    """The calls of one mode on one case: their labels, and how to make call i on a model."""

    def __init__(self, case: Case, mode: str, device: str = "cpu") -> None:
        self.mode = mode
        if mode == "shapes":
            self.items: list[tuple[str, Any]] = workloads.shape_inputs(case)
        else:
            calls = workloads.generate_calls(case)
            if calls is None:
                raise ValueError(
                    f"{case.name} does not generate text: the generation mode runs language models"
                )
            self.items = [(f"prompt {length}", kwargs) for length, kwargs in calls]
        self.items = [(label, to_device(inputs, device)) for label, inputs in self.items]

    @property
    def labels(self) -> list[str]:
        return [label for label, _ in self.items]

    def drop(self, labels: set[str]) -> None:
        self.items = [(label, inputs) for label, inputs in self.items if label not in labels]

    def call(self, fn: Callable[..., Any], model: Any, index: int) -> Any:
        inputs = self.items[index][1]
        if self.mode == "generate":
            return model.generate(**inputs, **workloads.start_token(model))
        args, kwargs = inputs
        return fn(*args, **kwargs)


class Wrapped:
    """A fresh model under one method: the callable, and its counts so far."""

    def __init__(self, case: Case, method: str, mode: str, backend: str, device: str = "cpu") -> None:
        self.method = method
        self.model = to_device(case.build_model(), device)
        self.fn: Callable[..., Any] = self.model
        self.backend: CountingBackend | None = None
        self.breaks = BreakCounter()
        if method == "jitlab":
            from jitlab.jit import jit

            if mode == "generate":
                self.model.forward = jit(self.model.forward, backend=backend)
            else:
                self.fn = jit(self.model, backend=backend)
        elif method == "compile":
            import torch._dynamo

            torch._dynamo.reset()
            self.backend = CountingBackend(backend)
            self.breaks.start()
            if mode == "generate":
                self.model.forward = torch.compile(self.model.forward, backend=self.backend)
            else:
                self.fn = torch.compile(self.model, backend=self.backend)
        elif method != "eager":
            raise ValueError(f"unknown method {method!r}: choose from {', '.join(VARY_METHODS)}")

    @property
    def jitted(self) -> Any:
        return self.model.forward if self.fn is self.model else self.fn

    def graphs(self) -> int:
        """Captures (jitlab.jit) or graphs received by the backend (torch.compile) so far."""
        if self.method == "jitlab":
            return self.jitted.explain().captures
        return self.backend.graphs if self.backend is not None else 0

    def hits(self) -> int:
        return sum(g.hits for g in self.jitted.explain().graphs) if self.method == "jitlab" else 0

    def counts(self) -> dict[str, Any]:
        if self.method == "jitlab":
            return jit_counts(self.jitted)
        if self.method == "compile":
            breaks, reasons = self.breaks.since()
            return {
                "graphs": self.graphs(),
                "ops": self.backend.ops,
                "breaks": breaks,
                "break_reasons": reasons,
            }
        return {}


def run_pass(calls: Calls, wrapped: Wrapped) -> tuple[list[Any], dict[str, list], float]:
    """Every call once, in order: outputs, what served each call (`served`, and the graphs and hits
    each added: a `generate` call runs the model once per token), and the seconds they took."""
    outputs: list[Any] = []
    per_call: dict[str, list] = {"served": [], "new_graphs": [], "new_hits": []}
    started = time.perf_counter()
    for index in range(len(calls.items)):
        graphs, hits = wrapped.graphs(), wrapped.hits()
        seed_call(index)
        output = calls.call(wrapped.fn, wrapped.model, index)
        block_until_done(output)
        outputs.append(snapshot(output))
        new_graphs, new_hits = wrapped.graphs() - graphs, wrapped.hits() - hits
        per_call["new_graphs"].append(new_graphs)
        per_call["new_hits"].append(new_hits)
        per_call["served"].append(_served(wrapped.method, new_graphs, new_hits))
    if wrapped.method != "jitlab":
        del per_call["new_hits"]  # TorchDynamo does not count its hits
    return outputs, per_call, time.perf_counter() - started


def _served(method: str, new_graphs: int, new_hits: int) -> str:
    """What served a call: "capture" (jitlab.jit captured), "graph" (TorchDynamo compiled a graph),
    "hit", or "eager" (jitlab.jit neither captured nor hit: it ran the call eagerly, a fallback)."""
    if new_graphs:
        return "capture" if method == "jitlab" else "graph"
    return "hit" if method == "compile" or new_hits else "eager"


def reference(
    case: Case, mode: str, backend: str, device: str
) -> tuple[Calls, Wrapped, list[Any], list[dict[str, str]]]:
    """Eager's outputs on every call eager accepts; the calls it rejects are dropped (with why)."""
    calls = Calls(case, mode, device)
    wrapped = Wrapped(case, "eager", mode, backend, device)
    outputs, dropped = [], []
    for index, label in enumerate(calls.labels):
        try:
            seed_call(index)
            outputs.append(snapshot(calls.call(wrapped.fn, wrapped.model, index)))
        except Exception as exc:  # a shape the model does not take: not a call to compare
            dropped.append({"call": label, "reason": one_line(exc)})
    calls.drop({d["call"] for d in dropped})
    if not calls.items:
        raise RuntimeError(f"eager rejects every call: {dropped[0]['reason']}")
    return calls, wrapped, outputs, dropped


def compare(calls: Calls, expected: list[Any], actual: list[Any]) -> dict[str, Any]:
    found = [
        difference(e, a, f"call {i + 1} ({label})")
        for i, (label, e, a) in enumerate(zip(calls.labels, expected, actual))
    ]
    wrong = [f for f in found if f is not None]
    result: dict[str, Any] = {"equal": not wrong, "equal_calls": len(found) - len(wrong)}
    if wrong:
        result["mismatch"] = wrong[0]
    return result


def tokens(calls: Calls, outputs: list[Any], model: Any) -> int:
    """New tokens eager generated over all calls: a decoder returns the prompt and the new tokens,
    an encoder-decoder the decoder's start token and the new tokens."""
    encoder_decoder = bool(getattr(model.config, "is_encoder_decoder", False))
    total = 0
    for (_, kwargs), output in zip(calls.items, outputs):
        given = 1 if encoder_decoder else kwargs["input_ids"].shape[-1]
        total += output.shape[0] * (output.shape[-1] - given)
    return total


def run_case(
    case: Case,
    methods: list[str],
    mode: str,
    backend: str,
    policy: TimingPolicy,
    emit: Any,
    device: str = "cpu",
) -> None:
    """Eager (the reference) first, then each compiled method's pass through the calls; then all of
    them timed in alternation. A method that fails is reported at once, the others go on."""
    emit({"event": "start", "case": case.name, "method": "eager"})
    try:
        calls, eager, expected, dropped = reference(case, mode, backend, device)
    except Exception as exc:
        error = f"eager run failed: {one_line(exc)}"
        for method in methods:
            emit({"event": "done", "case": case.name, "method": method, "result": _broken(error)})
        return
    shared = {"calls": calls.labels, "dropped": dropped}
    if mode == "generate":
        shared["tokens"] = tokens(calls, expected, eager.model)
    ready: dict[str, tuple[Wrapped, dict[str, Any]]] = {
        "eager": (eager, {"error": None, "equal": True, **shared})
    }
    for method in methods:
        if method == "eager":
            continue
        emit({"event": "start", "case": case.name, "method": method})
        try:
            with cold_caches(method), RecompileLimits() as limits:
                wrapped = Wrapped(case, method, mode, backend, device)
                outputs, per_call, seconds = run_pass(calls, wrapped)
            result = {
                "error": None,
                "calls": len(calls.items),
                **compare(calls, expected, outputs),
                **per_call,
            }
            result.update(first_pass_s=seconds, **wrapped.counts())
            if method == "compile":
                result.update(fallback=bool(limits.messages), fallback_reasons=limits.messages)
            ready[method] = (wrapped, result)
        except Exception as exc:  # the method failed on this model: that is the measurement
            emit(failure_event(case.name, method, exc))
    timed = {
        m: (lambda w=w: [calls.call(w.fn, w.model, i) for i in range(len(calls.items))])
        for m, (w, _) in ready.items()
    }
    timings = time_in_rounds(case.name, timed, {m: r for m, (_, r) in ready.items()}, policy, emit)
    if timings is None:
        return
    for method, (wrapped, result) in ready.items():
        timing = timings[method]
        result = {**result, **timing, "per_call_s": timing["median_s"] / len(calls.items)}
        if mode == "generate":
            result["per_token_s"] = timing["median_s"] / shared["tokens"]
        if method == "jitlab":  # after the timed calls too: a fallback during timing shows here
            after = jit_counts(wrapped.jitted)
            result.update(after_timing={k: after[k] for k in ("captures", "hits", "fallback")})
        emit({"event": "done", "case": case.name, "method": method, "result": result})


def _broken(error: str) -> dict[str, Any]:
    return {"equal": None, "error": error, "broken_case": True}


def _start(job: dict[str, Any]) -> CaseRunner:
    mode, backend, device = job["mode"], job["backend"], job.get("device", "cpu")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: choose from {', '.join(MODES)}")
    policy = TimingPolicy(budget_s=float(job["budget"]), min_block_s=0.005, min_samples=5, target_ci=0.03)
    warm_up(sorted({m for _, methods in job["items"] for m in methods} - {"eager"}), backend, device)
    return lambda case, methods, emit: run_case(case, methods, mode, backend, policy, emit, device)


def main(argv: list[str]) -> int:
    return serve_job(argv, _start)


if __name__ == "__main__":
    worker_entry(main)
