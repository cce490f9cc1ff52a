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


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for the whole session (started on first use)."""
    from postgres_testing import postgres_server

    with postgres_server() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path: Path) -> str:
    """A fresh empty store: a SQLite file, or a new database on the test PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "results.sqlite")
    return request.getfixturevalue("postgres").create_database()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `gpu` need a CUDA GPU that torch can use: skipped where there is none (torch is
    imported only when such a test was collected)."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    try:
        import torch

        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if not available:
        skip = pytest.mark.skip(
            reason="needs an NVIDIA GPU visible to torch (make test-gpu on a GPU machine)"
        )
        for item in gpu_items:
            item.add_marker(skip)
