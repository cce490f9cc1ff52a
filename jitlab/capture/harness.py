"""Driving capture workers: batches of cases per process, a time limit per method, and recovery.

Starting a process costs about two seconds here (importing torch and TorchDynamo), so one worker
runs many cases. The worker reports each method's start and result as a JSON line; the parent
watches those lines. When one method takes longer than the time limit, the parent kills the
worker's process group, records a timeout for that method, and starts a fresh worker for the rest;
a crash (signal, interpreter abort) is recorded for the method in flight the same way. So a bad
case costs itself only. This is the engine runner's contract (`jitlab.engine.runner.run_worker`:
own process group, kill on timeout, every ending turned into a result) applied to a stream of
results instead of one; it reuses the runner's helpers for killing and describing endings.

Ctrl-C is taken as a local run takes it (`jitlab.engine.interrupts`): the first one kills the
workers at once; each watcher then records the results its worker had already reported, records
nothing for the case in flight (it was killed by the user, not by its own fault), and raises
`KeyboardInterrupt`. The caller keeps what `on_result` received: a capture of thousands of cases
stopped in its fifth hour still reports the cases that finished.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jitlab.backends import get_backend
from jitlab.capture.corpus import Case
from jitlab.engine.interrupts import (
    deferred_interrupts,
    interrupt_requested,
    raise_if_interrupted,
    watched_worker,
)
from jitlab.engine.runner import kill_group, log_tail, signal_name
from jitlab.lifeline import lifeline
from jitlab.worker_python import module_argv

POLL_S = 0.05
STARTUP_S = 120.0  # importing torch and warming the tools up, on a loaded machine, before any case


def _failure(error: str) -> dict[str, Any]:
    return {"full_graph": False, "equal": None, "captured": False, "error": error}


class _Batch:
    """What is left to run: (case, methods still to run) in order."""

    def __init__(self, items: list[tuple[str, list[str]]]) -> None:
        self.items = [(name, list(methods)) for name, methods in items]

    def done(self, case: str, method: str) -> None:
        for name, methods in self.items:
            if name == case and method in methods:
                methods.remove(method)
        self.items = [(name, methods) for name, methods in self.items if methods]


def run_batch(
    corpora: list[str],
    items: list[tuple[str, list[str]]],
    timeout_s: float,
    calls: int = 3,
    on_result: Callable[[str, str, dict[str, Any]], None] | None = None,
    worker: str = "jitlab.capture.worker",
    options: dict[str, Any] | None = None,
    sources: dict[str, str] | None = None,
) -> dict[tuple[str, str], dict[str, Any]]:
    """Results keyed by (case, method) for every item, running workers until all are recorded.

    `worker` is the module run as the worker (`python -m WORKER JOB EVENTS`); `options` are extra
    fields of its job file (the speed worker's backend and budget). `sources` (case -> its file)
    lets each worker load only the files of the cases it still has to run: a ParityBench run
    gives 1,500 files, and a worker restarted after a timeout should not read them all again."""
    results: dict[tuple[str, str], dict[str, Any]] = {}
    batch = _Batch(items)

    def record(case: str, method: str, result: dict[str, Any]) -> None:
        results[(case, method)] = result
        batch.done(case, method)
        if on_result:
            on_result(case, method, result)

    while batch.items:
        raise_if_interrupted()  # Ctrl-C while the last worker ended: start no other
        needed = corpora if sources is None else list(dict.fromkeys(sources[name] for name, _ in batch.items))
        with tempfile.TemporaryDirectory(prefix="jitlab-capture-") as scratch:
            _run_worker(Path(scratch), needed, batch.items, timeout_s, calls, record, worker, options or {})
    return results


def _run_worker(
    workdir: Path,
    corpora: list[str],
    items: list[tuple[str, list[str]]],
    timeout_s: float,
    calls: int,
    record: Callable[[str, str, dict[str, Any]], None],
    worker: str,
    options: dict[str, Any],
) -> None:
    job_path, events_path, log_path = workdir / "job.json", workdir / "events.jsonl", workdir / "worker.log"
    job_path.write_text(json.dumps({"corpora": corpora, "items": items, "calls": calls, **options}))
    events_path.touch()
    # one thread and fresh compiler caches, exactly as a torch-compile measurement cell gets them
    compile_backend = get_backend("torch-compile")
    compile_backend.seed_scratch(str(workdir))
    backend_env = compile_backend.worker_environment(1, str(workdir))
    env = {**os.environ, **backend_env, "PYTHONUNBUFFERED": "1"}
    in_flight: tuple[str, str] | None = None
    started = time.monotonic()
    heard_from = False
    # the worker goes when this process goes, even by SIGKILL (jitlab.lifeline); it is waited
    # for in this call, by the thread that started it, which its Linux parent-death signal relies on
    with open(log_path, "w") as log, open(events_path) as events, lifeline() as line:
        process = subprocess.Popen(
            module_argv(worker, str(job_path), str(events_path)),
            env={**env, **line.env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a timeout kills compiler children too
            pass_fds=line.pass_fds,
        )
        try:
            with watched_worker(process.pid):  # a Ctrl-C kills it (and its compiler children) at once
                pending = ""
                while True:
                    stopping = interrupt_requested()  # asked before reading: what it reported is kept
                    finished = process.poll() is not None
                    pending += events.read()
                    *lines, pending = pending.split("\n")
                    for line in lines:
                        event = json.loads(line)
                        heard_from = True
                        if event["event"] == "start":
                            in_flight, started = (event["case"], event["method"]), time.monotonic()
                        else:
                            in_flight = None
                            record(event["case"], event["method"], event["result"])
                    if stopping:  # the case in flight was killed by the user: no result for it
                        raise KeyboardInterrupt
                    if finished:
                        break
                    if in_flight and time.monotonic() - started > timeout_s:
                        kill_group(process)
                        _record_ending(
                            in_flight, items, f"no result after {timeout_s:g} s (--timeout): killed", record
                        )
                        return
                    if not heard_from and time.monotonic() - started > timeout_s + STARTUP_S:
                        kill_group(process)
                        for name, methods in items:
                            for method in list(methods):
                                record(
                                    name, method, _failure("the worker did not start its first case in time")
                                )
                        return
                    time.sleep(POLL_S)
        except BaseException:  # Ctrl-C: do not leave the worker running
            kill_group(process)
            raise
    if process.returncode == 0:
        for name, methods in items:  # a clean exit leaves nothing behind; if it did, say so
            for method in list(methods):
                record(name, method, _failure("worker ended without a result for this method"))
        return
    if process.returncode < 0:
        reason = f"worker crashed with {signal_name(-process.returncode)}"
    else:
        tail = log_tail(log_path)
        last = tail.splitlines()[-1] if tail else "no output"
        reason = f"worker exited with code {process.returncode}: {last}"
    if in_flight is None:  # died outside any case (start-up): every remaining item fails alike
        for name, methods in items:
            for method in methods:
                record(name, method, _failure(reason))
        return
    _record_ending(in_flight, items, reason, record)


def _record_ending(
    in_flight: tuple[str, str],
    items: list[tuple[str, list[str]]],
    reason: str,
    record: Callable[[str, str, dict[str, Any]], None],
) -> None:
    """Record the method in flight as failed; if it was the eager reference, the whole case."""
    case, method = in_flight
    if method == "eager":
        for name, methods in items:
            if name == case:
                for m in list(methods):
                    record(case, m, {**_failure(f"eager run failed: {reason}"), "broken_case": True})
        return
    record(case, method, _failure(reason))


def run_cases(
    corpora: list[str],
    cases: list[Case],
    methods: list[str],
    timeout_s: float,
    calls: int = 3,
    jobs: int = 1,
    on_result: Callable[[str, str, dict[str, Any]], None] | None = None,
) -> dict[tuple[str, str], dict[str, Any]]:
    """All (case, method) results, with `jobs` workers running batches side by side. Ctrl-C stops
    every worker and raises `KeyboardInterrupt`; what finished before reached `on_result`."""
    items = [(case.name, list(methods)) for case in cases]
    sources = {case.name: case.source for case in cases} if all(case.source for case in cases) else None
    with deferred_interrupts():
        if jobs <= 1 or len(items) <= 1:
            return run_batch(corpora, items, timeout_s, calls, on_result, sources=sources)
        from concurrent.futures import ThreadPoolExecutor

        batches = [items[i::jobs] for i in range(jobs)]
        results: dict[tuple[str, str], dict[str, Any]] = {}
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for part in pool.map(
                lambda b: run_batch(corpora, b, timeout_s, calls, on_result, sources=sources), batches
            ):
                results.update(part)
        return results


def run_one_at_a_time(
    corpora: list[str],
    cases: list[Case],
    methods: list[str],
    worker: str,
    options: dict[str, Any],
    timeout_s: float,
    on_result: Callable[[str, str, dict[str, Any]], None] | None = None,
) -> dict[tuple[str, str], dict[str, Any]]:
    """Results keyed by (case, method) for every method on every case, run by `worker` processes one
    at a time (timings need the machine to themselves). Ctrl-C stops the worker and raises
    `KeyboardInterrupt`; what finished before reached `on_result`."""
    items = [(case.name, list(methods)) for case in cases]
    with deferred_interrupts():
        return run_batch(corpora, items, timeout_s, on_result=on_result, worker=worker, options=options)


def finished_cases(
    cases: list[Case], methods: list[str], results: dict[tuple[str, str], dict[str, Any]]
) -> list[Case]:
    """The cases with a result for every method: all of them after a whole run, fewer after Ctrl-C
    (a case half run is left out rather than counted with a method missing)."""
    return [case for case in cases if all((case.name, method) in results for method in methods)]
