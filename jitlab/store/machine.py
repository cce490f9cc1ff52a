"""Machine metadata recorded with every run: enough to tell whether two runs are comparable."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psutil

from jitlab.backends import all_backends


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        import cpuinfo

        return cpuinfo.get_cpu_info().get("brand_raw") or platform.processor()
    except Exception:  # py-cpuinfo may fail on exotic machines; the platform string is enough then
        return platform.processor() or "unknown"


def gpus() -> list[str]:
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def git_commit(directory: Path) -> str | None:
    """The commit of the user's project (the directory jitlab runs in), with '+dirty' if modified."""
    if not shutil.which("git"):
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(directory), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(directory), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty else "")


def machine_info(project_dir: Path | None = None) -> dict[str, Any]:
    memory = psutil.virtual_memory().total
    return {
        "hostname": platform.node(),
        "cpu": cpu_model(),
        "cores_logical": os.cpu_count(),
        "cores_physical": psutil.cpu_count(logical=False),
        "memory_bytes": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "gpus": gpus(),
        "backends": {b.name: b.version() for b in all_backends()},
        "project_commit": git_commit(project_dir or Path.cwd()),
    }


def machine_fingerprint(info: dict[str, Any]) -> str:
    """Runs with equal fingerprints ran on comparable hardware."""
    return f"{info.get('hostname')}|{info.get('cpu')}|{info.get('cores_logical')}|{','.join(info.get('gpus') or [])}"
