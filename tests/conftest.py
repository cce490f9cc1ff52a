"""Fixtures shared by all tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from jitlab_testing import run_jitlab


@pytest.fixture
def jitlab_cli():
    return run_jitlab


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "results.sqlite"
