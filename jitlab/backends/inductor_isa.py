"""TorchInductor's one-time probe of the CPU's vector instructions, made once per machine.

Before its first C++ kernel, Inductor builds and loads a small program for each vector instruction
set the CPU reports (AVX-512 VNNI, AVX-512, AVX2, ...) to learn which ones the compiler and the CPU
support, and keeps those builds in its cache folder. A user pays this once per machine: torch's
default cache folder outlives their programs. jitlab gives every cell a fresh cache folder so that
the cell's first call compiles its program from scratch, and so every torch-compile cell paid the
probe again: about 8 of the 10-15 s of a cold first call of `pi` on a 2-core VM, which is the
machine's set-up, not the program's compile time.

So the probe runs once per machine, interpreter and torch build, in a folder of its own, and its
builds are copied into each cell's fresh cache folder before the cell starts. The cell's graphs and
kernels stay cold. The copied builds are found by Inductor under keys made from the probe's source
and compiler flags, so a copy that no longer matches (another compiler, another torch) is ignored,
and Inductor probes as it did before.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: what the probe process runs: Inductor's own list of usable vector instruction sets
_PROBE = "from torch._inductor import cpu_vec_isa; cpu_vec_isa.valid_vec_isa_list()"
PROBE_TIMEOUT_S = 300.0


def probe_folder() -> Path:
    """Where this machine's probe builds are kept: per user, interpreter and torch build, in the
    temporary folder (where torch keeps its own cache by default)."""
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = "none"
    key = hashlib.sha256(f"{sys.executable}\0{torch_version}".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"jitlab-inductor-isa-{os.getuid()}" / key


@functools.cache
def ensure_probe() -> Path | None:
    """The folder holding the probe's builds, made now if this machine has none yet; None if the
    probe fails here (no compiler, say). The cell then probes for itself and meets the same
    failure in its own process, where it is reported. Asked once per process: a failed probe (up to
    PROBE_TIMEOUT_S) is not tried again for every cell."""
    folder = probe_folder()
    done = folder / "done"
    if done.exists():
        return folder / "cache"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:  # several cells of one machine may start at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return folder / "cache"
        building = Path(tempfile.mkdtemp(prefix="probe-", dir=folder))
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(building)}
        try:
            subprocess.run(
                [sys.executable, "-c", _PROBE],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=PROBE_TIMEOUT_S,
                check=True,
            )
        except (subprocess.SubprocessError, OSError):
            shutil.rmtree(building, ignore_errors=True)
            return None
        shutil.rmtree(folder / "cache", ignore_errors=True)
        building.rename(folder / "cache")
        done.touch()
    return folder / "cache"


def seed_cache(cache_dir: Path) -> bool:
    """Copy the machine's probe builds into a cell's fresh Inductor cache folder (`cache_dir`).
    True when they were copied."""
    probe = ensure_probe()
    if probe is None:
        return False
    shutil.copytree(probe, cache_dir, dirs_exist_ok=True, ignore=shutil.ignore_patterns("locks"))
    return True
