"""Remembering what each backend's probe said, so that `jitlab backends` does not import every
framework every time.

A probe asks a backend its version and devices in a worker process of its own (TensorFlow and Triton
abort in one process), which means importing the framework: TensorFlow alone takes 4 to 7 s on a
2-core machine, and the nine probes took 9 to 15 s in all. What a probe says only changes when
what it depends on changes, and that can be read without importing anything: the interpreter, the
installed version of the backend's distribution (package metadata), the variables that choose
devices (CUDA_VISIBLE_DEVICES, JAX_PLATFORMS, ...), the GPU device files, and jitlab's own version.
So a probe is kept with those as its key and reused while they are all the same; the versions
shown are then still the installed ones. Only successful probes are kept. `--refresh` asks again.

The cache is `backends.json` in the user's cache folder ($XDG_CACHE_HOME/jitlab, else
~/.cache/jitlab), one file for every interpreter (the interpreter is part of each key).
"""

from __future__ import annotations

import glob
import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jitlab.backends.base import Backend

CACHE_NAME = "backends.json"
#: prefixes of the environment variables that choose a framework's devices or mode
DEVICE_ENV_PREFIXES = ("CUDA_", "HIP_", "ROCR_", "JAX_", "XLA_", "TF_", "TRITON_", "NUMBA_", "NVIDIA_")


def cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jitlab" / CACHE_NAME


def probe_key(backend: Backend) -> dict[str, Any]:
    """Everything a probe's answer depends on that can be read without importing the framework."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        jitlab_version = version("jitlab")
    except PackageNotFoundError:
        jitlab_version = None
    return {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "distribution": backend.distribution,
        "version": backend.version(),
        "jitlab": jitlab_version,
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(DEVICE_ENV_PREFIXES)},
        "gpu_files": sorted(
            glob.glob("/dev/nvidia*") + glob.glob("/dev/kfd") + glob.glob("/dev/dri/renderD*")
        ),
    }


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached_probe(backend: Backend, path: Path | None = None) -> dict[str, Any] | None:
    """The probe kept for `backend` under the same key, with `probed_at`, or None."""
    entry = _read(path or cache_path()).get(f"{sys.executable}::{backend.name}")
    if not isinstance(entry, dict) or entry.get("key") != probe_key(backend):
        return None
    probe = entry.get("probe")
    return {**probe, "probed_at": entry.get("probed_at")} if isinstance(probe, dict) else None


def keep_probes(probes: dict[str, tuple[Backend, dict[str, Any]]], path: Path | None = None) -> str | None:
    """Keep the successful probes; returns why they could not be kept, or None."""
    target = path or cache_path()
    data = _read(target)
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for name, (backend, probe) in probes.items():
        if probe.get("status") == "ok":
            data[f"{sys.executable}::{name}"] = {
                "key": probe_key(backend),
                "probe": probe,
                "probed_at": stamp,
            }
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.with_suffix(".tmp")
        scratch.write_text(json.dumps(data, indent=1))
        scratch.replace(target)
    except OSError as exc:
        return f"{target}: {exc.strerror or exc}"
    return None
