"""Running the peak probes, each in a fresh process, and assembling their figures.

A probe that fails (a framework missing or crashing) leaves its figure out and says why in
`details`; bandwidth and FLOP/s are required, so their failure is an error.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from jitlab.backends.base import THREAD_ENV_VARS, cpu_count
from jitlab.errors import UserError
from jitlab.lifeline import lifeline
from jitlab.machine.probes import OVERHEAD_FRAMEWORKS
from jitlab.worker_python import module_argv

PROBE_TIMEOUT_S = 300.0


def installed_frameworks() -> list[str]:
    return [f for f in OVERHEAD_FRAMEWORKS if f == "python" or importlib.util.find_spec(f) is not None]


def run_probe(name: str, quick: bool, timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """Run one probe in its own process with all threads; a crash or timeout becomes a failed result."""
    threads = str(cpu_count())
    env = {**os.environ, **{var: threads for var in THREAD_ENV_VARS}, "TF_CPP_MIN_LOG_LEVEL": "3"}
    with tempfile.TemporaryDirectory(prefix="jitlab-peak-") as scratch:
        result_path = Path(scratch) / "result.json"
        argv = module_argv("jitlab.machine.probes", name, str(result_path))
        try:
            with lifeline() as line:  # the probe goes when this process goes (jitlab.lifeline)
                done = subprocess.run(
                    argv + (["--quick"] if quick else []),
                    env={**env, **line.env},
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=timeout_s,
                    pass_fds=line.pass_fds,
                )
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "reason": f"no result after {timeout_s:g} s"}
        if result_path.exists():
            try:
                return json.loads(result_path.read_text())
            except json.JSONDecodeError:
                pass
        tail = [line for line in (done.stderr or "").splitlines() if line.strip()][-1:]
        return {
            "status": "failed",
            "reason": f"probe exited with code {done.returncode}" + (f": {tail[0]}" if tail else ""),
        }


def measure_all(quick: bool = False) -> dict[str, Any]:
    details: dict[str, Any] = {"quick": quick, "threads": cpu_count()}
    bandwidth = run_probe("bandwidth", quick)
    flops = run_probe("flops", quick)
    for name, result in (("bandwidth", bandwidth), ("flops", flops)):
        if result.get("status") != "ok":
            raise UserError(f"measuring the machine's {name} failed: {result.get('reason')}")
        details[name] = {k: v for k, v in result.items() if k != "status"}
    overhead: dict[str, float] = {}
    failures: dict[str, str] = {}
    for framework in installed_frameworks():
        result = run_probe(f"overhead:{framework}", quick)
        if result.get("status") == "ok":
            overhead[framework] = float(result["seconds_per_call"])
        else:
            failures[framework] = str(result.get("reason"))
    details["overhead_failures"] = failures
    random_words: dict[str, float] = {}
    result = run_probe("random", quick)
    if result.get("status") == "ok":
        random_words = {k: float(v) for k, v in result["words_per_s"].items()}
        details["random"] = {k: v for k, v in result.items() if k not in ("status", "words_per_s")}
    else:  # Numba missing: the figure is left out and the limits that need it say so
        details["random_failure"] = str(result.get("reason"))
    gpus: list[dict[str, Any]] = []
    if gpu_present():
        result = run_probe("gpu", quick)
        if result.get("status") == "ok":
            gpus = list(result.get("devices") or [])
        else:  # a GPU peak that failed is said, not fatal: the CPU peaks stand
            details["gpu_failure"] = str(result.get("reason"))
    return {
        "bandwidth_bytes_per_s": float(bandwidth["bandwidth_bytes_per_s"]),
        "flops_f32": float(flops["flops_f32"]),
        "flops_f64": float(flops["flops_f64"]),
        "overhead_s": overhead,
        "random_words_per_s": random_words,
        "gpus": gpus,
        "details": details,
    }


def gpu_present() -> bool:
    """An NVIDIA driver and torch to measure with (decided without importing torch)."""
    driver = os.path.exists("/dev/nvidiactl") or bool(shutil.which("nvidia-smi"))
    return driver and importlib.util.find_spec("torch") is not None
