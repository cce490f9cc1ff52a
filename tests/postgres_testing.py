"""A real PostgreSQL server for the tests, started in a temporary folder and stopped afterwards.

Debian's PostgreSQL 15 binaries (`/usr/lib/postgresql/15/bin`, or another version found there or
on PATH). As root the server runs as the `postgres` user, since PostgreSQL refuses to run as root.
Authentication is `trust` on 127.0.0.1 and a socket in the folder, on a free port, except for users
made with `password_user` (a real password, checked with scram-sha-256). `stop` and `start` take
the server away and bring it back on the same port, as an outage would. Under CI=true a missing
server is an error, not a skip (.ci/run installs the package).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if found:
        return Path(found[0]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(command: list[str], cwd: str) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(f"'{c}'" for c in command)]


class PostgresServer:
    def __init__(self, folder: Path, port: int, bindir: Path) -> None:
        self.folder, self.port, self.bindir = folder, port, bindir
        self.user = "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")

    def _ctl(self, *args: str) -> None:
        command = [str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"), *args]
        subprocess.run(_as_server_user(command, str(self.folder)), check=True, capture_output=True, text=True)

    def stop(self) -> None:
        """Stop the server at once, as a crash or a pulled cable would (connections just end)."""
        self._ctl("-m", "immediate", "-w", "stop")

    def start(self) -> None:
        """Start it again on the same port (after `stop`)."""
        self._ctl(
            "-l",
            str(self.folder / "server.log"),
            "-o",
            _server_options(self.port, self.folder),
            "-w",
            "start",
        )

    def password_user(self, name: str, password: str) -> str:
        """A user who must give `password` (scram-sha-256 over TCP), owning a fresh database; returns
        the database's URL with the password in it."""
        self.psql(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        database = f"{name}_db"
        self.psql(f"CREATE DATABASE {database} OWNER {name}")
        hba = self.folder / "data" / "pg_hba.conf"
        hba.write_text(f"host all {name} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        self.psql("SELECT pg_reload_conf()")
        for _ in range(100):  # the reload is asynchronous: wait until a password is asked for
            asked = subprocess.run(
                [
                    "psql",
                    "-w",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-U",
                    name,
                    "-d",
                    database,
                    "-Atc",
                    "SELECT 1",
                ],
                capture_output=True,
                env={**os.environ, "PGPASSWORD": ""},
            )
            if asked.returncode != 0:
                break
            time.sleep(0.1)
        return f"postgresql://{name}:{password}@127.0.0.1:{self.port}/{database}"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh empty database; returns its URL."""
        name = "jitlab_" + uuid.uuid4().hex[:12]
        self.psql(f"CREATE DATABASE {name}")
        return self.url(name)

    def psql(self, sql: str, database: str = "postgres") -> str:
        return subprocess.run(
            ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "-d", database, "-Atc", sql],
            check=True,
            capture_output=True,
            text=True,
        ).stdout


def _server_options(port: int, folder: Path) -> str:
    return f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=100"


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    bindir = postgres_bin()
    if bindir is None:
        if os.environ.get("CI") == "true":
            raise RuntimeError("PostgreSQL is not installed: .ci/run installs Debian's postgresql package")
        pytest.skip("PostgreSQL server binaries not found (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="jitlab-pg-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    port = free_port()
    run = lambda *cmd: subprocess.run(  # noqa: E731
        _as_server_user([str(c) for c in cmd], str(folder)), check=True, capture_output=True, text=True
    )
    try:
        run(
            bindir / "initdb",
            "-D",
            data,
            "-A",
            "trust",
            "-U",
            "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres"),
        )
        run(
            bindir / "pg_ctl",
            "-D",
            data,
            "-l",
            folder / "server.log",
            "-o",
            _server_options(port, folder),
            "-w",
            "start",
        )
        yield PostgresServer(folder, port, bindir)
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                _as_server_user(
                    [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], str(folder)
                ),
                capture_output=True,
            )
        shutil.rmtree(folder, ignore_errors=True)
