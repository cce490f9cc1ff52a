"""Worker process of `jitlab capture --speed`: times cases eagerly, under jitlab.jit and torch.compile.

    python -m jitlab.capture.speed_worker JOB.json EVENTS.jsonl

JOB.json holds {"corpora": [paths], "items": [[case, ["eager", "jitlab", "compile"]], ...],
"backend": "inductor", "budget": 0.4, "min_block": 0.005}. It speaks the capture worker's event
protocol (a "start" line before each method, a "done" line with its result), so the capture harness
drives it with the same time limits and crash recovery. "eager" always comes first in an item: it
is the reference; if it fails, every method of the case is reported as a broken case.

Per case and method, on a freshly built model and the case's example inputs (seed 0):

1. First call: wrapping (`jitlab.jit` / `torch.compile`) + capture + compile + run, timed as one.
   Compiled methods run inside `torch._inductor.utils.fresh_cache()`: a new, empty on-disk cache
   folder and cleared in-memory caches, so that neither method profits from kernels the other (or
   an earlier case) compiled. Once per worker, both methods compile a tiny program first, so that
   one-time costs (importing TorchDynamo, Inductor, the JIT) are not charged to the first case.
2. Equality: the first call's output, the model's visible state afterwards and the inputs
   afterwards are compared with eager's (`jitlab.capture.compare.difference`), with torch's and
   Python's random generators seeded alike before the call. Later calls are not compared: stateful
   cases (counters, BatchNorm in training mode, dropout) are timed as they are, and whether their
   later calls stay equal is what plain `jitlab capture` checks.
3. Steady state: `WARM_CALLS` more calls first, so that a program which recompiles on every call
   (an attribute counter guarded by value) has reached both JITs' cache limits (8 entries) and
   settled, then `jitlab.engine.timing.measure` on the same inputs with the job's budget (its own
   first call is not used). CPU torch returns finished tensors, so no
   synchronisation beyond `block_until_done` is needed.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch

from jitlab.backends.sync import block_until_done
from jitlab.capture.compare import copy_inputs, difference, read_state, snapshot, state_paths
from jitlab.capture.corpus import Case
from jitlab.capture.worker import CaseRunner, one_line, seed_call, serve_job, worker_entry
from jitlab.engine.spec import TimingPolicy
from jitlab.engine.stats import summarize
from jitlab.engine.timing import measure

SPEED_METHODS = ("eager", "jitlab", "compile")
WARM_CALLS = 10  # more than the recompile limits of jitlab.jit (max_entries=8) and TorchDynamo (8)


def wrap(method: str, model: Any, backend: str) -> tuple[Callable[..., Any], Callable[[], dict[str, Any]]]:
    """The callable the user would call, and a function reporting how the method compiled it."""
    if method == "eager":
        return model, dict
    if method == "jitlab":
        from jitlab.jit import jit

        compiled = jit(model, backend=backend)

        def jitlab_info() -> dict[str, Any]:
            report = compiled.explain()
            info: dict[str, Any] = {"graphs": len(report.graphs), "breaks": len(report.breaks)}
            info["fallback"] = bool(report.fallbacks or report.disabled)
            return info

        return compiled, jitlab_info
    if method == "compile":
        import torch._dynamo

        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        compiled = torch.compile(model, backend=backend)

        def compile_info() -> dict[str, Any]:
            counters = torch._dynamo.utils.counters
            return {
                "graphs": int(counters["stats"]["unique_graphs"]),
                "breaks": int(sum(counters["graph_break"].values())),
            }

        return compiled, compile_info
    raise ValueError(f"unknown speed method {method!r}: choose from {', '.join(SPEED_METHODS)}")


@contextlib.contextmanager
def cold_caches(method: str) -> Iterator[None]:
    """A fresh, empty compile cache for a compiled method (nothing for eager)."""
    if method == "eager":
        yield
        return
    from torch._inductor.utils import fresh_cache

    with fresh_cache():
        yield


def time_method(
    case: Case, method: str, backend: str, policy: TimingPolicy, paths: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(result, observation): timings of one method on one case, and what its first call produced."""
    model = case.build_model()
    args, kwargs = case.build_inputs(0)
    with cold_caches(method), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seed_call(0)
        start = time.perf_counter()
        fn, info = wrap(method, model, backend)
        output = fn(*args, **kwargs)
        block_until_done(output)
        first = time.perf_counter() - start
        observed = {
            "output": snapshot(output),
            "state": read_state(model, paths),
            "inputs": copy_inputs(args, kwargs),
            "observed": snapshot(case.observe(model)) if case.observe else None,
        }
        for _ in range(WARM_CALLS):
            block_until_done(fn(*args, **kwargs))
        timing = measure(lambda: fn(*args, **kwargs), block_until_done, policy)
        summary = summarize(timing.samples_s)
        result: dict[str, Any] = {
            "first_call_s": first,
            "median_s": summary.median,
            "ci_low_s": summary.ci_low,
            "ci_high_s": summary.ci_high,
            "samples": summary.count,
            "loops": timing.loops,
            **info(),
        }
        if timing.warnings:
            result["warnings"] = timing.warnings
    return result, observed


def mismatch(reference: dict[str, Any], observed: dict[str, Any]) -> str | None:
    """The first difference of a method's first call from eager's, or None."""
    found = difference(reference["output"], observed["output"], "first call output")
    for key in ("state", "inputs", "observed"):
        found = found or difference(reference[key], observed[key], f"{key} after the first call")
    return found


def run_case(case: Case, methods: list[str], backend: str, policy: TimingPolicy, emit: Any) -> None:
    """Eager (the reference) first, then each compiled method; `emit(event)` reports progress."""
    emit({"event": "start", "case": case.name, "method": "eager"})
    try:
        paths = state_paths(case.build_model())
        reference_result, reference = time_method(case, "eager", backend, policy, paths)
    except Exception as exc:  # the case itself is broken: no speed-up can be measured on it
        error = f"eager run failed: {one_line(exc)}"
        for method in methods:
            emit({"event": "done", "case": case.name, "method": method, "result": _broken(error)})
        return
    reference_result.update(equal=True, error=None)
    emit({"event": "done", "case": case.name, "method": "eager", "result": reference_result})
    for method in methods:
        if method == "eager":
            continue
        emit({"event": "start", "case": case.name, "method": method})
        started = time.perf_counter()
        try:
            result, observed = time_method(case, method, backend, policy, paths)
            found = mismatch(reference, observed)
            result.update(equal=found is None, error=None)
            if found:
                result["mismatch"] = found
        except Exception as exc:  # the method failed on this program: that is the measurement
            result = {"equal": None, "error": one_line(exc)}
        result["seconds"] = round(time.perf_counter() - started, 4)
        emit({"event": "done", "case": case.name, "method": method, "result": result})


def _broken(error: str) -> dict[str, Any]:
    return {"equal": None, "error": error, "broken_case": True}


def warm_up(methods: list[str], backend: str) -> None:
    """Compile a tiny program once with each method, so one-time costs are charged to no case."""
    tiny = torch.ones(3)
    for method in methods:
        with cold_caches(method), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn, _ = wrap(method, torch.nn.Tanh(), backend)
            fn(tiny)


def _start(job: dict[str, Any]) -> CaseRunner:
    backend = job["backend"]
    policy = TimingPolicy(
        budget_s=float(job["budget"]),
        min_block_s=float(job.get("min_block", 0.005)),
        min_samples=5,
        target_ci=0.03,
    )
    warm_up(sorted({m for _, methods in job["items"] for m in methods} - {"eager"}), backend)
    return lambda case, methods, emit: run_case(case, methods, backend, policy, emit)


def main(argv: list[str]) -> int:
    return serve_job(argv, _start)


if __name__ == "__main__":
    worker_entry(main)
