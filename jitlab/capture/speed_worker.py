"""Worker process of `jitlab capture --speed`: times cases eagerly, under jitlab.jit and torch.compile.

    python -m jitlab.capture.speed_worker JOB.json EVENTS.jsonl

JOB.json holds {"corpora": [paths], "items": [[case, ["eager", "jitlab", "compile"]], ...],
"backend": "inductor", "budget": 0.4, "min_block": 0.005, "device": "cpu"}. It speaks the capture worker's event
protocol (a "start" line before each method, a "done" line with its result), so the capture harness
drives it with the same time limits and crash recovery. "eager" always comes first in an item: it
is the reference; if it fails, every method of the case is reported as a broken case.

Per case and method, on a freshly built model and the case's example inputs (seed 0):

1. First call: wrapping (`jitlab.jit` / `torch.compile`) + capture + compile + run, timed as one.
   Compiled methods run inside `torch._inductor.utils.fresh_cache()`: a new, empty on-disk cache
   folder and cleared in-memory caches, so that neither method profits from kernels the other (or
   an earlier case) compiled. Once per worker, both methods compile a tiny program first, so that
   one-time costs (importing TorchDynamo, Inductor, the JIT) are not charged to the first case.
2. Equality: the first call's output, what it printed, the model's visible state afterwards and
   the inputs afterwards are compared with eager's (`jitlab.capture.compare.difference`), with torch's and
   Python's random generators seeded alike before the call.
3. Steady state: `WARM_CALLS` more calls, so that a program which recompiles on every call
   (an attribute counter guarded by value) has reached both JITs' cache limits (8 entries) and
   settled. Then one more call, seeded like the first, whose output is compared with eager's call of
   the same number: jitlab.jit's first call runs the program itself while capturing it (its output is
   eager's by construction), so only a later call shows what the compiled code computes, and both
   JITs are held to that same check. Whether every later call stays equal, what it printed and
   which state it left is what plain `jitlab capture` checks.
4. Timing: the three methods are timed *in alternation* on the same inputs
   (`measure_interleaved`): one inner loop count for all of them, the smallest that makes every
   method's block at least `min_block` seconds (the first call of a block, after another method's
   block, is slower with colder caches, and weighs the same in each method's figure this way),
   then one block per method per round, in a rotating order, until every method's 95% CI of the
   median is within the target or the budget (per method) is spent. On a machine shared with other
   jobs, load that comes and goes hits the three alike, so their ratios stay comparable. CPU torch
   returns finished tensors; on a GPU (`--device cuda`) `block_until_done` waits for the device
   after every call, so a block times finished calls, not their launches.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from jitlab.backends.sync import block_until_done
from jitlab.capture.compare import copy_inputs, difference, read_state, snapshot, state_paths
from jitlab.capture.corpus import Case
from jitlab.capture.devices import check_device, describe, to_device
from jitlab.capture.worker import CaseRunner, one_line, printed_text, seed_call, serve_job, worker_entry
from jitlab.engine.spec import TimingPolicy
from jitlab.stats.summary import summarize

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


@dataclass
class Prepared:
    """A method's callable after its first call, ready for steady-state timing."""

    call: Callable[[], Any]
    info: Callable[[], dict[str, Any]]
    result: dict[str, Any]


def first_call(
    case: Case, method: str, backend: str, paths: list[str], device: str = "cpu"
) -> tuple[Prepared, dict[str, Any]]:
    """Build a fresh model, wrap it with `method`, time the first call (cold compile caches), and
    make the warm calls; returns the prepared callable and what the first call produced."""
    model = to_device(case.build_model(), device)
    args, kwargs = to_device(case.build_inputs(0), device)
    with cold_caches(method), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seed_call(0)
        start = time.perf_counter()
        fn, info = wrap(method, model, backend)
        with printed_text() as text:
            output = fn(*args, **kwargs)
            block_until_done(output)
        first = time.perf_counter() - start
        observed = {
            "output": snapshot(output),
            "printed": text.getvalue(),
            "state": read_state(model, paths),
            "inputs": copy_inputs(args, kwargs),
            "observed": snapshot(case.observe(model)) if case.observe else None,
        }
        for _ in range(WARM_CALLS):
            block_until_done(fn(*args, **kwargs))
        seed_call(0)
        steady = fn(*args, **kwargs)
        block_until_done(steady)
        observed["steady_output"] = snapshot(steady)
    prepared = Prepared(lambda: fn(*args, **kwargs), info, {"first_call_s": first})
    return prepared, observed


def _block(call: Callable[[], Any], loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        block_until_done(call())
    return (time.perf_counter() - start) / loops


def common_loops(loops: dict[str, int], per_call: dict[str, float], policy: TimingPolicy) -> dict[str, int]:
    """One loop count for every method: the first call of a block, right after another method's
    block, runs with colder caches (about 1 ms more on a 3 ms training step on the 2-core VM), and
    it must weigh the same in each method's figure; a method timed one call per block beside one
    timed two was charged twice as much of it. A method much slower than the fastest keeps fewer
    calls, so that its block fits its budget's share of the minimum rounds: there the cold call
    weighs little either way."""
    common = max(loops.values(), default=1)
    longest = max(policy.budget_s / max(policy.min_samples, 1), policy.min_block_s)
    return {name: max(n, min(common, int(longest / max(per_call[name], 1e-9)))) for name, n in loops.items()}


def measure_interleaved(
    calls: dict[str, Callable[[], Any]], policy: TimingPolicy
) -> dict[str, dict[str, Any]]:
    """Steady-state timing of several callables in alternation (see the module docstring)."""
    loops: dict[str, int] = {}
    per_call: dict[str, float] = {}
    for name, call in calls.items():
        n, per_call[name] = 1, _block(call, 1)
        while per_call[name] * n < policy.min_block_s:
            n = max(n * 2, int(math.ceil(policy.min_block_s / max(per_call[name], 1e-9))))
            per_call[name] = _block(call, n)
        loops[name] = n
    loops = common_loops(loops, per_call, policy)
    order = list(calls)
    for name in order:  # one more block each before sampling: caches and allocators settle
        _block(calls[name], loops[name])
    samples: dict[str, list[float]] = {name: [] for name in order}
    budget_end = time.perf_counter() + policy.budget_s * len(order)
    rounds = 0
    while True:
        shift = rounds % len(order)
        for name in order[shift:] + order[:shift]:
            samples[name].append(_block(calls[name], loops[name]))
        rounds += 1
        if rounds >= policy.max_samples:
            break
        if rounds < policy.min_samples:
            continue
        if time.perf_counter() > budget_end or all(_precise(s, policy.target_ci) for s in samples.values()):
            break
    out = {}
    for name in order:
        summary = summarize(samples[name])
        out[name] = {
            "median_s": summary.median,
            "ci_low_s": summary.ci_low,
            "ci_high_s": summary.ci_high,
            "samples": summary.count,
            "loops": loops[name],
        }
        if not _precise(samples[name], policy.target_ci):
            out[name]["warnings"] = [
                f"95% CI of the median wider than ±{policy.target_ci:.0%} when the budget ran out"
            ]
    return out


def time_in_rounds(
    case: str,
    calls: dict[str, Callable[[], Any]],
    results: dict[str, dict[str, Any]],
    policy: TimingPolicy,
    emit: Any,
) -> dict[str, dict[str, Any]] | None:
    """`measure_interleaved(calls)` with warnings silenced. If a call raises, every method waiting
    in `results` (method -> its result so far) is reported failed with it, and None returned."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return measure_interleaved(calls, policy)
        except Exception as exc:  # a later call failed: every method still waiting fails with it
            for method, result in results.items():
                failed = {**result, "error": f"timing failed: {one_line(exc)}"}
                emit({"event": "done", "case": case, "method": method, "result": failed})
            return None


def _precise(samples: list[float], target: float) -> bool:
    summary = summarize(samples)
    return summary.median > 0 and (summary.ci_high - summary.ci_low) / 2 <= target * summary.median


#: the number of the call whose output is compared after the warm calls (see the module docstring)
STEADY_CALL = WARM_CALLS + 2


def mismatch(reference: dict[str, Any], observed: dict[str, Any]) -> str | None:
    """The first difference of a method's first call, or of its steady-state call, from eager's."""
    found = difference(reference["output"], observed["output"], "first call output")
    for key in ("printed", "state", "inputs", "observed"):
        found = found or difference(reference[key], observed[key], f"{key} after the first call")
    return found or difference(
        reference["steady_output"], observed["steady_output"], f"output of call {STEADY_CALL}"
    )


def run_case(
    case: Case, methods: list[str], backend: str, policy: TimingPolicy, emit: Any, device: str = "cpu"
) -> None:
    """Eager (the reference) first, then each compiled method's first call; then all of them timed
    in alternation. `emit(event)` reports progress: a method that fails is reported at once."""
    emit({"event": "start", "case": case.name, "method": "eager"})
    try:
        paths = state_paths(case.build_model())
        eager, reference = first_call(case, "eager", backend, paths, device)
    except Exception as exc:  # the case itself is broken: no speed-up can be measured on it
        error = f"eager run failed: {one_line(exc)}"
        for method in methods:
            emit({"event": "done", "case": case.name, "method": method, "result": _broken(error)})
        return
    eager.result.update(equal=True, error=None)
    ready = {"eager": eager}
    for method in methods:
        if method == "eager":
            continue
        emit({"event": "start", "case": case.name, "method": method})
        started = time.perf_counter()
        try:
            prepared, observed = first_call(case, method, backend, paths, device)
            found = mismatch(reference, observed)
            prepared.result.update(equal=found is None, error=None)
            if found:
                prepared.result["mismatch"] = found
            prepared.result["seconds"] = round(time.perf_counter() - started, 4)
            ready[method] = prepared
        except Exception as exc:  # the method failed on this program: that is the measurement
            result = {
                "equal": None,
                "error": one_line(exc),
                "seconds": round(time.perf_counter() - started, 4),
            }
            emit({"event": "done", "case": case.name, "method": method, "result": result})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            timings = measure_interleaved({m: p.call for m, p in ready.items()}, policy)
        except Exception as exc:  # a later call failed: every method still waiting fails with it
            for method, prepared in ready.items():
                result = {**prepared.result, "error": f"steady-state timing failed: {one_line(exc)}"}
                emit({"event": "done", "case": case.name, "method": method, "result": result})
            return
    for method, prepared in ready.items():
        result = {**prepared.result, **timings[method], **prepared.info()}
        emit({"event": "done", "case": case.name, "method": method, "result": result})


def _broken(error: str) -> dict[str, Any]:
    return {"equal": None, "error": error, "broken_case": True}


def warm_up(methods: list[str], backend: str, device: str = "cpu") -> None:
    """Compile a tiny program once with each method, so one-time costs are charged to no case
    (on a GPU: the CUDA context, and Triton's first kernel)."""
    tiny = torch.ones(3, device=device)
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
    try:  # on a cluster the parent checked only the name: this node may have no such device
        device = check_device(job.get("device", "cpu"))
    except ValueError as exc:
        unusable = f"{one_line(exc)} (on this node)"
        return lambda case, methods, emit: _fail_every_method(case, methods, unusable, emit)
    warm_up(sorted({m for _, methods in job["items"] for m in methods} - {"eager"}), backend, device)
    named = describe(device)  # each node names its own GPU in its report

    def run_item(case: Case, methods: list[str], emit: Any) -> None:
        def emit_with_device(event: dict[str, Any]) -> None:
            if event.get("event") == "done":
                event["result"]["device"] = named
            emit(event)

        run_case(case, methods, backend, policy, emit_with_device, device)

    return run_item


def _fail_every_method(case: Case, methods: list[str], error: str, emit: Any) -> None:
    for method in methods:
        result = {**_broken(error), "device_unusable": True}
        emit({"event": "done", "case": case.name, "method": method, "result": result})


def main(argv: list[str]) -> int:
    return serve_job(argv, _start)


if __name__ == "__main__":
    worker_entry(main)
