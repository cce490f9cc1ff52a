"""Shared test helpers: running the `jitlab` command as a user would, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.fixture
def jitlab_cli():
    return run_jitlab


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "results.sqlite"
