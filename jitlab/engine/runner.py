"""Running cells in worker processes: isolation, time limits, and turning every way a worker can
end (result, exception, signal, timeout) into a result record. Nothing here raises for a bad cell:
a crashing or hanging backend is a failed cell, and the run goes on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jitlab.backends import get_backend
from jitlab.engine.spec import CellSpec

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


def run_worker(argv: list[str], env: Mapping[str, str], timeout_s: float, workdir: Path) -> dict[str, Any]:
    """Run `python -m jitlab.engine.worker ARGV... RESULT` and read its result."""
    result_path = workdir / "result.json"
    log_path = workdir / "worker.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "jitlab.engine.worker", *argv, str(result_path)],
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so a timeout kills compiler children too
        )
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(process)
            return {"status": "timeout", "reason": f"no result after {timeout_s:g} s (--timeout): killed"}
        except BaseException:  # Ctrl-C: do not leave the worker running
            kill_group(process)
            raise
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
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def execute_cell(spec: CellSpec, timeout_s: float) -> dict[str, Any]:
    """Measure one cell in a fresh worker with a fresh scratch folder (compiler caches start cold)."""
    backend = get_backend(spec.backend)
    if not backend.is_available():
        return {"status": "unavailable", "reason": f"{backend.name} is not installed: {backend.install_hint}"}
    with tempfile.TemporaryDirectory(prefix="jitlab-cell-") as scratch:
        workdir = Path(scratch)
        spec_path = workdir / "spec.json"
        spec_path.write_text(json.dumps(spec.to_json()))
        env = dict(backend.worker_environment(spec.threads, scratch))
        env["PYTHONUNBUFFERED"] = "1"
        return run_worker([str(spec_path)], env, timeout_s, workdir)


def probe_backend(name: str, timeout_s: float = 120.0) -> dict[str, Any]:
    """Version and devices of one backend, asked in its own process."""
    backend = get_backend(name)
    if not backend.is_available():
        return {"status": "unavailable", "reason": backend.install_hint}
    with tempfile.TemporaryDirectory(prefix="jitlab-probe-") as scratch:
        env = dict(backend.worker_environment(1, scratch))
        return run_worker(["--probe", name], env, timeout_s, Path(scratch))
