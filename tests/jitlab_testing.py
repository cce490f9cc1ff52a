"""Helpers shared by the tests: running the `jitlab` command as a user would, in a subprocess.

A module of its own (not conftest.py) so that `from jitlab_testing import ...` is unambiguous even
though several test folders have a conftest.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"


def run_jitlab(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600):
    """Run `python -m jitlab ARGS...`; returns the CompletedProcess (text, both streams captured)."""
    return subprocess.run(
        [sys.executable, "-m", "jitlab", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
