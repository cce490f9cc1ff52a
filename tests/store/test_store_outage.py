"""A store server that goes away mid-run, on a real PostgreSQL server stopped and started again:
a short outage is ridden out (the run waits, says so, and finishes with every cell stored once);
one longer than --store-retry stops the run with exit code 4, keeps what was written, and
`--resume` finishes it. A server that answers and refuses (a wrong password) is bad input: exit 2 at
once, no waiting."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
from jitlab_testing import DATA
from postgres_testing import postgres_server

from jitlab.cli import exit_codes
from jitlab.store import Store

WORKLOAD = str(DATA / "store_workload.py")
SIZES = [1, 2, 3, 4, 5, 6]
RUN = ["run", WORKLOAD, "--backends", "python", "--processes", "1", "--budget", "0.05", "--threads", "1"]


@pytest.fixture(scope="module")
def server():
    """A server of this module's own: stopping it must not disturb other tests."""
    with postgres_server() as started:
        yield started


class Running:
    """`jitlab run` in the background, its stderr read line by line as it comes."""

    def __init__(self, *args: str, cwd) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jitlab", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line)

    def wait_for_line(self, text: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert self.process.poll() is None, f"the run ended first: {''.join(self.lines)}"
            assert time.monotonic() < deadline, f"no {text!r} on stderr: {''.join(self.lines)}"
            time.sleep(0.1)

    def finish(self, timeout: float = 300) -> tuple[int, str]:
        self.process.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return self.process.returncode, "".join(self.lines)


def stored_cells(server, database: str) -> int:
    try:
        return int(server.psql("SELECT count(*) FROM cells", database))
    except subprocess.CalledProcessError:  # the run has not made the tables yet
        return 0


def wait_for_cells(server, database: str, count: int, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while stored_cells(server, database) < count:
        assert time.monotonic() < deadline, f"fewer than {count} cells stored after {timeout} s"
        time.sleep(0.2)


def assert_every_cell_once(url: str, run_id: int) -> None:
    store = Store(url, create=False)
    cells = store.cells(run_id)
    assert sorted(c.size for c in cells) == SIZES, [
        (c.size, c.status) for c in cells
    ]  # none lost, none twice
    assert all(c.ok and c.samples_s for c in cells), [(c.size, c.status, c.reason) for c in cells]
    assert store.run(run_id).status == "finished"
    store.close()


def test_a_server_restart_mid_run_is_ridden_out(server, tmp_path):
    url = server.create_database()
    database = url.rsplit("/", 1)[1]
    sizes = ",".join(map(str, SIZES))
    run = Running(*RUN, "--sizes", sizes, "--store", url, "--store-retry", "90", "--no-plot", cwd=tmp_path)
    wait_for_cells(server, database, 2)
    server.stop()
    try:
        run.wait_for_line("store unreachable, retrying for")  # the run is waiting with a cell in memory
        time.sleep(2)
    finally:
        server.start()
    code, stderr = run.finish()
    assert code == exit_codes.OK, stderr
    assert "Connection refused" in stderr or "closed the connection" in stderr, stderr
    assert_every_cell_once(url, 1)


def test_an_outage_longer_than_the_limit_stops_with_exit_4_and_resume_finishes(server, tmp_path, jitlab_cli):
    url = server.create_database()
    database = url.rsplit("/", 1)[1]
    sizes = ",".join(map(str, SIZES))
    run = Running(*RUN, "--sizes", sizes, "--store", url, "--store-retry", "2", "--no-plot", cwd=tmp_path)
    wait_for_cells(server, database, 2)
    server.stop()
    try:
        code, stderr = run.finish()
    finally:
        server.start()
    assert code == exit_codes.STORE_UNREACHABLE, stderr
    last = stderr.strip().splitlines()[-1]
    assert "unreachable for" in last and f"jitlab run {WORKLOAD} --resume 1" in last, stderr
    assert "store unreachable, retrying for" in stderr
    kept = Store(url, create=False).cells(1)
    assert 2 <= len(kept) < len(SIZES) and len({c.size for c in kept}) == len(kept)
    resumed = jitlab_cli("run", WORKLOAD, "--resume", "1", "--store", url, "--no-plot", cwd=tmp_path)
    assert resumed.returncode == exit_codes.OK, resumed.stderr
    assert_every_cell_once(url, 1)


def test_a_wrong_password_is_bad_input_at_once(postgres, jitlab_cli, tmp_path):
    url = postgres.password_user("pw_outage", "right-password")
    wrong = url.replace("right-password", "wrong-password")
    result = jitlab_cli(*RUN, "--sizes", "1", "--store", wrong, cwd=tmp_path)
    assert result.returncode == exit_codes.BAD_INPUT, result.stderr
    assert "password authentication failed" in result.stderr and "retrying" not in result.stderr
    assert "wrong-password" not in result.stderr
    result = jitlab_cli("runs", "--store", url.replace("pw_outage_db", "no_such_db"), cwd=tmp_path)
    assert result.returncode == exit_codes.BAD_INPUT and "does not exist" in result.stderr


def test_a_negative_store_retry_is_bad_input(jitlab_cli, tmp_path):
    result = jitlab_cli(*RUN, "--sizes", "1", "--store-retry", "-1", "--store", str(tmp_path / "s.sqlite"))
    assert result.returncode == exit_codes.BAD_INPUT and "--store-retry -1 is negative" in result.stderr
    assert list(tmp_path.iterdir()) == []
