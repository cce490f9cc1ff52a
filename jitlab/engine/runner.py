"""Running cells in worker processes: isolation, time limits, and turning every way a worker can
end (result, exception, signal, timeout) into a result record. Nothing here raises for a bad cell:
a crashing or hanging backend is a failed cell, and the run goes on.

A cell is measured in one or more worker processes (`measure_process`), and their results are
merged into the cell's (`jitlab.engine.processes.merge_process_results`). `execute_cell` runs them
one after another; `jitlab run` runs process k of every cell in round k (`jitlab.engine.rounds`).
The processes of a cell share one scratch folder: the first starts with cold compiler caches (its
first call is the reported compile time), later ones find the caches it filled (torch.compile,
Triton) and so do not compile from scratch.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from jitlab.backends import get_backend
from jitlab.backends.base import Backend
from jitlab.engine import valgrind
from jitlab.engine.canary import probe
from jitlab.engine.interrupts import kill_process_group, raise_if_interrupted, watched_worker
from jitlab.engine.processes import merge_process_results
from jitlab.engine.spec import INSTRUCTIONS, LAUNCHED_AT_ENV, PROCESS_INDEX_ENV, CellSpec
from jitlab.engine.timing import process_target_ci
from jitlab.lifeline import lifeline
from jitlab.process_result import CellResult, ProcessResult
from jitlab.worker_python import module_argv

STDERR_TAIL_LINES = 8


def log_tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
    return "\n".join(kept)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_worker(
    argv: list[str], env: Mapping[str, str], timeout_s: float, workdir: Path, prefix: Sequence[str] = ()
) -> dict[str, Any]:
    """Run `python -m jitlab.engine.worker ARGV... RESULT` (under `prefix`, e.g. Valgrind) and read
    its result."""
    result_path = workdir / "result.json"
    log_path = workdir / "worker.log"
    # the worker goes when this process goes, even by SIGKILL (lifeline.py); it is waited for in
    # this call, by the thread that started it, which its Linux parent-death signal relies on
    with open(log_path, "w") as log, lifeline() as line:
        process = subprocess.Popen(
            [*prefix, *module_argv("jitlab.engine.worker", *argv, str(result_path))],
            env={**os.environ, **env, **line.env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so a timeout kills compiler children too
            pass_fds=line.pass_fds,
        )
        with watched_worker(process.pid):  # a Ctrl-C during a local run kills it (interrupts.py)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                kill_group(process)
                return {"status": "timeout", "reason": f"no result after {timeout_s:g} s (--timeout): killed"}
            except BaseException:  # Ctrl-C: do not leave the worker running
                kill_group(process)
                raise
        # the worker skipped its interpreter's teardown (worker.leave_now): what it started and left
        # behind in its process group (a compiler's worker pool) goes with it
        kill_process_group(process.pid)
        raise_if_interrupted()  # the worker was killed by the Ctrl-C: its cell is not finished
    if result_path.exists():
        try:
            with open(result_path) as f:
                result = json.load(f)
        except json.JSONDecodeError:
            result = None
        if result is not None:
            if result.get("status") == "failed" and result.get("traceback"):
                result["log"] = failure_log(log_tail(log_path, 40), result["traceback"])
            return result
    tail = log_tail(log_path)
    if process.returncode < 0:
        reason = f"worker crashed with {signal_name(-process.returncode)}"
    else:
        reason = f"worker exited with code {process.returncode} and no result"
    if tail:
        reason += f": {tail.splitlines()[-1]}"
    return {"status": "failed", "reason": reason, "log": tail}


def failure_log(output_tail: str, worker_traceback: str) -> str:
    """What is stored as a failed cell's log: the worker's last output lines, then the traceback of
    the exception it caught (which never reaches its output, so it would be lost otherwise)."""
    parts = [output_tail.strip(), worker_traceback.strip()]
    return "\n".join(part for part in parts if part)


def kill_group(process: subprocess.Popen) -> None:
    kill_process_group(process.pid)
    process.wait()


def execute_cell(spec: CellSpec, timeout_s: float) -> CellResult:
    """Measure one cell in fresh workers sharing a fresh scratch folder (compiler caches start cold
    in the first); `timeout_s` applies to each worker process."""
    backend = get_backend(spec.backend)
    if not backend.is_available():
        return CellResult(
            status="unavailable", reason=f"{backend.name} is not installed: {backend.install_hint}"
        )
    with tempfile.TemporaryDirectory(prefix="jitlab-cell-") as scratch:
        results = run_cell_processes(spec, backend, timeout_s, Path(scratch))
    return merge_process_results(results, spec.policy.target_ci, spec.policy.processes)


def scratch_root(token: str) -> Path:
    """The folder of a run's cell folders on this machine (a cluster node has its own); `token`
    names the run's measuring session."""
    return Path(tempfile.gettempdir()) / f"jitlab-rounds-{token}"


def remove_scratch(token: str) -> None:
    """Remove a measuring session's cell folders on this machine (a job run on every node at the end)."""
    shutil.rmtree(scratch_root(token), ignore_errors=True)


#: the extra processes of a cell stop once their wall time would pass this many budgets (process 0
#: plans from its own start-up; a framework that recompiles in every process costs more than that)
EXTRA_PROCESSES_WALL_BUDGETS = 1.5


def planned_count(first: ProcessResult) -> int:
    """How many processes a cell gets, as its process 0 planned (1 when process 0 did not succeed)."""
    if not first.ok:
        return 1
    return max(1, int(first.processes_planned or 1))


def later_spec(spec: CellSpec, first: ProcessResult) -> CellSpec:
    """The spec of a cell's processes after the first: each samples for the share of the budget
    process 0 planned, to the per-process CI target, as one process."""
    planned = planned_count(first)
    share = first.sampling_share_s or spec.policy.budget_s / planned
    target = process_target_ci(spec.policy.target_ci, planned)
    return replace(spec, policy=replace(spec.policy, budget_s=share, target_ci=target, processes=1))


def extra_processes_limit(spec: CellSpec) -> float:
    """Wall seconds the extra processes of a cell may take together before the rest are dropped
    (no limit when the cell may add processes up to `max_processes`: the user bounded them)."""
    if not spec.policy.startup_in_budget or spec.policy.max_processes > spec.policy.processes:
        return math.inf
    return EXTRA_PROCESSES_WALL_BUDGETS * spec.policy.budget_s


def run_cell_processes(
    spec: CellSpec, backend: Backend, timeout_s: float, scratch: Path
) -> list[ProcessResult]:
    """Process 0, then as many more as process 0 planned (`processes_planned`: it knows its start-up
    time and how long a block takes), each with an equal share of what the budget leaves for
    sampling, one right after another. Later processes run even when one of them fails, so the cell
    can say which processes disagreed; they stop early when they turn out dearer than planned.
    (`jitlab run` interleaves the processes of all its cells in rounds instead: `engine.rounds`.)"""
    results = [measure_process(spec, 0, timeout_s, scratch, backend)]
    planned = planned_count(results[0])
    if planned > 1:
        later = later_spec(spec, results[0])
        limit = extra_processes_limit(spec)
        spent = last = 0.0
        for index in range(1, planned):
            if spent + last > limit:
                break
            results.append(measure_process(later, index, timeout_s, scratch, backend))
            last = results[-1].wall_s or 0.0
            spent += last
    return results


def measure_process(
    spec: CellSpec,
    index: int,
    timeout_s: float,
    scratch: Path,
    backend: Backend | None = None,
    canary: bool = False,
) -> ProcessResult:
    """Process `index` of a cell, in `scratch` (the cell's folder, shared by its processes: the
    compiler caches process 0 fills are found by the later ones). With `canary`, the drift canary
    is read just before the worker starts and kept in the result (`canary`); `wall_s` is how long
    the process took, start-up included. Process 0 of a backend that is not installed is an
    unavailable result, with no process started."""
    backend = backend or get_backend(spec.backend)
    if index == 0 and not backend.is_available():
        return ProcessResult(
            status="unavailable", reason=f"{backend.name} is not installed: {backend.install_hint}"
        )
    scratch.mkdir(parents=True, exist_ok=True)
    if index == 0:
        backend.seed_scratch(str(scratch))
    env = dict(backend.worker_environment(spec.threads, str(scratch)))
    env["PYTHONUNBUFFERED"] = "1"
    reading = probe() if canary and spec.policy.measure != INSTRUCTIONS else None
    started = time.monotonic()
    raw = run_process(spec, index, env, timeout_s, scratch)
    # a worker that wrote no result (killed, crashed) did not say which process it was
    result = {"process": index, **raw, "wall_s": time.monotonic() - started}
    if reading is not None:
        result["canary"] = reading
    return ProcessResult.from_worker(result)


def run_process(
    spec: CellSpec, index: int, env: Mapping[str, str], timeout_s: float, scratch: Path
) -> dict[str, Any]:
    """One worker process of a cell, in its own folder under the cell's scratch folder."""
    workdir = scratch / f"process-{index}"
    workdir.mkdir()
    spec_path = workdir / "spec.json"
    spec_path.write_text(json.dumps(spec.to_json()))
    env = {**env, PROCESS_INDEX_ENV: str(index), LAUNCHED_AT_ENV: repr(time.time())}
    prefix: list[str] = []
    if spec.policy.measure == INSTRUCTIONS:  # counted under Callgrind (jitlab.engine.valgrind)
        out = str(workdir / "callgrind.out")
        prefix = valgrind.command(out)
        env = {**env, **valgrind.environment(), valgrind.OUT_ENV: out}
    return run_worker([str(spec_path)], env, timeout_s, workdir, prefix)


def probe_backend(name: str, timeout_s: float = 120.0) -> dict[str, Any]:
    """Version and devices of one backend, asked in its own process."""
    backend = get_backend(name)
    if not backend.is_available():
        return {"status": "unavailable", "reason": backend.install_hint}
    with tempfile.TemporaryDirectory(prefix="jitlab-probe-") as scratch:
        env = dict(backend.worker_environment(1, scratch))
        return run_worker(["--probe", name], env, timeout_s, Path(scratch))
