"""Worker process of `jitlab capture`: runs cases under capture methods and reports as it goes.

    python -m jitlab.capture.worker JOB.json EVENTS.jsonl

JOB.json holds {"corpora": [paths], "items": [[case, [methods]], ...], "calls": N}. For every item
the worker runs the case eagerly twice (the reference, and a check that eager repeats itself: a
case whose two eager runs differ is broken), then under each method, and appends one JSON line
per event to EVENTS.jsonl: {"event": "start", "case", "method"} before a method runs and
{"event": "done", "case", "method", "result"} after. The parent reads the lines while the worker
runs, so when a method hangs or crashes the process, the parent knows which one, records it and
starts a new worker for what is left. Everything a method raises is recorded, never propagated.

What each call printed (to `sys.stdout`) is recorded per call and compared with eager's, as is the
case's `observe` value after every call: a program whose prints or outside containers differ from
eager's on any call is not equal to eager.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any, TextIO

import numpy as np
import torch

from jitlab.capture.cases import load_corpora
from jitlab.capture.compare import MISSING, copy_inputs, difference, read_state, snapshot, state_paths
from jitlab.capture.corpus import Case
from jitlab.capture.methods import MethodUnavailable, capture, warm_up
from jitlab.lifeline import hold_lifeline, release_lifeline

CALL_SEED = 1234
ERROR_CHARS = 240


def one_line(exc: BaseException) -> str:
    """`Type: first non-empty line of the message`, shortened."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    preamble = (
        lines[0].endswith(":") or "failed in the TorchScript interpreter" in lines[0] if lines else False
    )
    if preamble and len(lines) > 1 and "Error" in lines[-1]:
        text += " ... " + lines[-1]  # TorchScript's first line is a preamble; the cause comes last
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."


def failure_event(case: str, method: str, exc: BaseException) -> dict[str, Any]:
    """The "done" event of a method that raised on a case (the raise is the measurement)."""
    return {
        "event": "done",
        "case": case,
        "method": method,
        "result": {"equal": None, "error": one_line(exc)},
    }


def seed_call(call_index: int) -> None:
    """Seed torch, Python's `random` and NumPy's global generator the same way before the same call
    of every method."""
    torch.manual_seed(CALL_SEED + call_index)
    random.seed(CALL_SEED + call_index)
    np.random.seed(CALL_SEED + call_index)


def run_calls(case: Case, method: str, calls: int, paths: list[str]) -> dict[str, Any]:
    """Capture a fresh model with `method` on the example inputs (seed 0), then make `calls`
    calls, call i on fresh inputs drawn under seed i (call 0's inputs equal the example's)."""
    model = case.build_model()
    initial = read_state(model, paths)
    example_args, example_kwargs = case.build_inputs(0)
    seed_call(-1)
    captured = capture(method, model, example_args, example_kwargs)
    outputs, printed, inputs, observed = [], [], [], []
    for i in range(calls):
        args, kwargs = case.build_inputs(i)
        seed_call(i)
        captured.before_call()
        with printed_text() as text:
            outputs.append(snapshot(captured.call(*args, **kwargs)))
        printed.append(text.getvalue())
        inputs.append(copy_inputs(args, kwargs))
        observed.append(snapshot(case.observe(model)) if case.observe else None)
    return {
        "outputs": outputs,
        "printed": printed,
        "initial": initial,
        "state": read_state(captured.owner, paths),
        "inputs": inputs,
        "observed": observed,
        "captured": captured,
    }


@contextlib.contextmanager
def printed_text() -> Iterator[io.StringIO]:
    """What the code in the block prints to `sys.stdout` (TorchScript's `print` writes there too)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        yield text


def compare_runs(reference: dict[str, Any], run: dict[str, Any]) -> str | None:
    """None when `run` matches the eager `reference` (outputs, prints, state, inputs, observed after
    every call), else the first difference. State the captured program does not keep counts only if
    eager changed it."""
    for i, (expected, actual) in enumerate(zip(reference["outputs"], run["outputs"])):
        found = difference(expected, actual, f"call {i + 1} output")
        if found:
            return found
    for i, (expected, actual) in enumerate(zip(reference["printed"], run["printed"])):
        if expected != actual:
            return f"call {i + 1} printed {printed_difference(expected, actual)}"
    for path, expected in reference["state"].items():
        changed = difference(reference["initial"][path], expected, path) is not None
        actual = run["state"][path]
        if isinstance(actual, str) and actual == MISSING and not changed:
            continue  # constant configuration a converted module does not keep: nothing visible
        found = difference(expected, actual, f"state {path}")
        if found:
            return found
    for i, (expected, actual) in enumerate(zip(reference["inputs"], run["inputs"])):
        found = difference(expected, actual, f"call {i + 1} inputs afterwards")
        if found:
            return found
    for i, (expected, actual) in enumerate(zip(reference["observed"], run["observed"])):
        found = difference(expected, actual, f"call {i + 1} observed state")
        if found:
            return found
    return None


def initial_difference(reference: dict[str, Any], run: dict[str, Any]) -> str | None:
    """None when `run`'s model was built with the state `reference`'s was, else the first difference.

    Two builds of one case can differ where the state is uninitialised memory (`torch.Tensor(n)`
    without an init): two eager builds in a row may get the same freed block and agree, and the
    build a method runs on, later, other bytes. Its outputs then differ from eager's for every
    method, which says nothing about the method."""
    for path, expected in reference["initial"].items():
        found = difference(expected, run["initial"].get(path, MISSING), f"initial {path}")
        if found:
            return found
    return None


def printed_difference(expected: str, actual: str, limit: int = 80) -> str:
    """The first line where two printed texts differ, as `line N: 'got' instead of 'expected'`."""
    got, wanted = actual.splitlines(), expected.splitlines()
    if got == wanted:  # the same lines, different line endings
        return f"{actual[-limit:]!r} instead of {expected[-limit:]!r}"
    line = next((k for k, (a, e) in enumerate(zip(got, wanted)) if a != e), min(len(got), len(wanted)))

    def shown(lines: list[str]) -> str:
        text = lines[line] if line < len(lines) else "<nothing>"
        return repr(text if len(text) <= limit else text[: limit - 3] + "...")

    return f"line {line + 1}: {shown(got)} instead of {shown(wanted)}"


def run_method(case: Case, method: str, reference: dict[str, Any], calls: int) -> dict[str, Any]:
    """The result of one case under one method (never raises for the case's or tool's errors)."""
    started = time.perf_counter()
    result: dict[str, Any] = {"full_graph": None, "equal": None, "captured": False, "error": None}
    try:
        run = run_calls(case, method, calls, list(reference["state"]))
        if (differs := initial_difference(reference, run)) is not None:
            return _broken(f"eager is not deterministic: another build starts from other values ({differs})")
        result["equal"] = (mismatch := compare_runs(reference, run)) is None
        if mismatch:
            result["mismatch"] = mismatch
        full, note = run["captured"].verdict()
        result["full_graph"] = full
        result["graphs"] = run["captured"].graphs()
        result["graphs_per_call"] = run["captured"].graphs_per_call()
        if note:
            result["note"] = note
        if not full and (kinds := run["captured"].kinds()):
            result["kinds"] = kinds
    except MethodUnavailable as exc:
        result["error"] = str(exc)
        result["unavailable"] = True
    except Exception as exc:  # the tool failed on this program: that is the measurement
        result["error"] = one_line(exc)
        if result["equal"] is None:
            result["full_graph"] = False
    if method == "dynamo" and not result.get("unavailable"):
        result["graphs_per_call"] = _dynamo_partial(case, calls)
    result["captured"] = bool(result["full_graph"] and result["equal"])
    result["seconds"] = round(time.perf_counter() - started, 4)
    return result


def _dynamo_partial(case: Case, calls: int) -> int | None:
    """Graphs per call of TorchDynamo with graph breaks allowed, on a fresh model (None if it fails)."""
    from jitlab.capture.methods import dynamo_graphs_per_call

    try:
        inputs = []
        for i in range(calls):
            inputs.append(case.build_inputs(i))
        seed_call(-1)
        return dynamo_graphs_per_call(case.build_model(), inputs)
    except Exception:  # noqa: BLE001 - the fullgraph=True result already says how dynamo failed
        return None


def run_case(case: Case, methods: list[str], calls: int, emit: Any) -> None:
    """Run the eager reference, then each method; `emit(event)` reports progress."""
    emit({"event": "start", "case": case.name, "method": "eager"})
    try:
        paths = state_paths(case.build_model())  # the model is not kept: a model can be gigabytes
        reference = run_calls(case, "eager", calls, paths)
        reference.pop("captured")  # its model: only its outputs and state are compared
        again = run_calls(case, "eager", calls, paths)
    except Exception as exc:
        error = f"eager run failed: {one_line(exc)}"
        for method in methods:
            emit({"event": "done", "case": case.name, "method": method, "result": _broken(error)})
        return
    # as ParityBench does: a program whose two eager runs differ (uninitialised parameters, a counter
    # of instances, randomness from a generator nobody seeds) cannot tell a method right from wrong
    differs = initial_difference(reference, again) or compare_runs(reference, again)
    del again  # not held while the methods run (one model and two copies of its state fewer)
    if differs is not None:
        error = f"eager is not deterministic: a second eager run differs ({differs})"
        for method in methods:
            emit({"event": "done", "case": case.name, "method": method, "result": _broken(error)})
        return
    for method in methods:
        emit({"event": "start", "case": case.name, "method": method})
        emit(
            {
                "event": "done",
                "case": case.name,
                "method": method,
                "result": run_method(case, method, reference, calls),
            }
        )


def _broken(error: str) -> dict[str, Any]:
    return {"full_graph": None, "equal": None, "captured": False, "error": error, "broken_case": True}


def _emitter(stream: TextIO) -> Any:
    def emit(event: dict[str, Any]) -> None:
        stream.write(json.dumps(event) + "\n")
        stream.flush()

    return emit


#: runs one case's methods, emitting one event per result
CaseRunner = Callable[[Case, list[str], Callable[[dict[str, Any]], None]], None]


def serve_job(argv: list[str], start: Callable[[dict[str, Any]], CaseRunner]) -> int:
    """The part every capture worker shares: read the job, load its cases, then run each item and
    stream its events. `start(job)` warms up and returns the function that runs one case."""
    job_path, events_path = argv
    with open(job_path) as f:
        job = json.load(f)
    torch.set_num_threads(int(os.environ.get("JITLAB_CAPTURE_THREADS", "1")))
    cases = {case.name: case for case in load_corpora(job["corpora"])}
    run_item = start(job)
    with open(events_path, "a") as stream:
        emit = _emitter(stream)
        for name, methods in job["items"]:
            run_item(cases[name], methods, emit)
    return 0


def worker_entry(main: Callable[[list[str]], int]) -> None:
    """`python -m ...` entry: a crash prints its traceback for the parent's log and exits 1. The
    worker dies with its parent, even one killed by SIGKILL (`jitlab.lifeline`)."""
    hold_lifeline()
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    finally:
        release_lifeline()


def _start(job: dict[str, Any]) -> CaseRunner:
    warm_up(sorted({method for _, methods in job["items"] for method in methods}))
    calls = int(job.get("calls", 3))
    return lambda case, methods, emit: run_case(case, methods, calls, emit)


def main(argv: list[str]) -> int:
    return serve_job(argv, _start)


if __name__ == "__main__":
    worker_entry(main)
