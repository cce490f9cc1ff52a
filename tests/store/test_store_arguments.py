"""`--store` and JITLAB_STORE: a file path, sqlite:///PATH or postgresql://...; any other URL is an
error (exit 2, one line), never a file name; an unreachable database writes nothing and is not bad
input (exit 4, after waiting --store-retry seconds for it); passwords are never printed."""

from __future__ import annotations

import re
import socket

import pytest

from jitlab.errors import UserError
from jitlab.store.urls import mask_password, parse_store


def one_line_error(result, code: int = 2) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    "url",
    [
        "http://example.org/results",
        "mysql://me:hunter2@db/results",
        "s3://bucket/results.sqlite",
        "redis://x:1",
    ],
)
def test_unsupported_schemes_are_errors_not_files(jitlab_cli, tmp_path, url):
    for args in (
        ["runs", "--store", url],
        ["run", "pi", "--backends", "python", "--sizes", "1e3", "--store", url],
    ):
        line = one_line_error(jitlab_cli(*args, cwd=tmp_path))
        assert "is not supported" in line and "postgresql://" in line and "hunter2" not in line
        # the form it asks for survives the masking of passwords
        assert "postgresql://USER@HOST[:PORT]/DATABASE" in line and "USER:PASSWORD@HOST" in line
    line = one_line_error(jitlab_cli("runs", cwd=tmp_path, env={"JITLAB_STORE": url}))
    assert "is not supported" in line
    assert list(tmp_path.iterdir()) == []  # nothing was created, under any name


def test_store_forms():
    assert parse_store("results.sqlite").path.name == "results.sqlite"
    assert str(parse_store("sqlite:///rel/s.db").path) == "rel/s.db"
    assert str(parse_store("sqlite:////abs/s.db").path) == "/abs/s.db"
    pg = parse_store("postgresql://me:hunter2@db.example:5433/bench")
    assert pg.kind == "postgresql" and pg.url.startswith("postgresql+psycopg://me:hunter2@")
    assert pg.display == "postgresql://me:***@db.example:5433/bench"
    assert parse_store("postgres://me@db/bench").kind == "postgresql"
    with pytest.raises(UserError, match="names no database"):
        parse_store("postgresql://me@db")
    assert mask_password("postgresql://db/x?password=hunter2&sslmode=require") == (
        "postgresql://db/x?password=***&sslmode=require"
    )


def test_unreachable_database_is_one_line_and_nothing_is_written(jitlab_cli, tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://me:hunter2@127.0.0.1:{port}/results"
    args = ("run", "pi", "--backends", "python", "--sizes", "1e3", "--store", url)
    result = jitlab_cli(*args, "--store-retry", "0", cwd=tmp_path)
    line = one_line_error(result, code=4)
    assert f"postgresql://me:***@127.0.0.1:{port}/results" in line and "hunter2" not in result.stderr
    assert "unreachable" in line and "Connection refused" in line and "check that the server runs" in line
    assert list(tmp_path.iterdir()) == []
    # with a limit it waits, saying so, and then stops the same way
    result = jitlab_cli(*args, "--store-retry", "1.5", cwd=tmp_path)
    assert result.returncode == 4, result.stderr
    waits = [
        line for line in result.stderr.splitlines() if line.startswith("store unreachable, retrying for")
    ]
    assert waits and "hunter2" not in result.stderr, result.stderr
    assert re.search(r"unreachable for \d+s \(.*Connection refused", result.stderr), result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_missing_database_on_a_running_server(jitlab_cli, postgres, tmp_path):
    result = jitlab_cli("runs", "--store", postgres.url("no_such_database"), cwd=tmp_path)
    assert "does not exist" in one_line_error(result)
