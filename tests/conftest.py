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
