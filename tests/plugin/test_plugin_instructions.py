"""The pytest plugin counting instructions (`--jitlab-measure instructions`): the session restarts
itself under Callgrind, stores counts, ends with its table, and a 5% longer test fails the session
against the earlier one; without Valgrind it says how to install it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from jitlab_testing import kill_all, still_running

from jitlab.engine import valgrind
from jitlab.store import Store

pytest_plugins = ["pytester"]

USER_TESTS = """
import os

FACTOR = float(os.environ.get("WORK_FACTOR", "1"))


def work(n):
    total = 0
    for i in range(int(n * FACTOR)):
        total += i
    return total


def test_work(jitlab_bench):
    assert jitlab_bench(work, 10_000, size=10_000) == sum(range(int(10_000 * FACTOR)))
"""


@pytest.mark.slow
@pytest.mark.skipif(
    valgrind.valgrind_path() is None and os.environ.get("CI") != "true", reason="Valgrind is not installed"
)
def test_counted_sessions_compare_on_instructions(pytester, tmp_path, monkeypatch):
    pytester.makepyfile(test_user=USER_TESTS)
    store = tmp_path / "bench.sqlite"
    base = ["--jitlab-store", str(store), "-p", "no:cacheprovider", "--jitlab-measure", "instructions"]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # the restarted session's Callgrind folder goes here
    first = pytester.runpytest_subprocess(*base)
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["*jitlab_bench cells of run 1*", "*test_work*python*10000*Minstr*±*"])
    (cell,) = Store(store).cells(1)
    assert cell.measure == "instructions" and cell.instructions and not cell.samples_s
    monkeypatch.setenv("WORK_FACTOR", "1.05")
    slower = pytester.runpytest_subprocess(*base, "--jitlab-compare", "1", "--jitlab-compare-fail", "1")
    slower.assert_outcomes(passed=1)
    assert slower.ret == pytest.ExitCode.TESTS_FAILED
    slower.stdout.fnmatch_lines(
        [
            "*test_work*python*+*%*slower*",
            "*significantly slower than in run 1 by more than 1%: the session fails*",
        ]
    )
    # 5% more loop iterations; the call around the loop is counted too (once seen at +3.0% in a
    # full suite run, +5.x% alone): the change is a few percent, not its exact size
    change = float(
        re.search(r"test_work\s*│\s*python.*?([+-][\d.]+)%\s*│\s*slower", slower.stdout.str()).group(1)
    )
    assert 2.0 < change < 8.0
    assert not list(scratch.glob("jitlab-callgrind-*"))  # each session removed its Callgrind folder


def test_without_valgrind_the_session_says_how_to_install_it(pytester, tmp_path):
    pytester.makepyfile(test_user=USER_TESTS)
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink(sys.executable, bare / "python")
    pytester._monkeypatch.setenv("PATH", str(bare))
    result = pytester.runpytest_subprocess("--jitlab-measure", "instructions", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--jitlab-measure instructions needs Valgrind*apt-get install valgrind*"])


SLEEPING_TEST = """
import os
import time


def test_sleeps():
    with open(os.environ["SESSION_PID_FILE"], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)
"""


@pytest.mark.slow
@pytest.mark.skipif(
    valgrind.valgrind_path() is None and os.environ.get("CI") != "true", reason="Valgrind is not installed"
)
def test_the_counted_session_goes_when_the_first_is_killed(pytester, tmp_path):
    """The session restarted under Callgrind is a child of the one the user started: a SIGKILL of
    that one (a cancelled CI job) takes it along (jitlab.lifeline), instead of leaving the whole
    test suite running under Valgrind."""
    pytester.makepyfile(test_user=SLEEPING_TEST)
    pid_file = tmp_path / "session.pid"
    first = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--jitlab-measure", "instructions"],
        cwd=pytester.path,
        env={**os.environ, "SESSION_PID_FILE": str(pid_file)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its group is not this test's: whatever is left is killed with it
    )
    try:
        end = time.monotonic() + 240
        while not (pid_file.exists() and pid_file.read_text()) and first.poll() is None:
            assert time.monotonic() < end, "the counted session never started its test"
            time.sleep(0.2)
        assert first.poll() is None, f"the first session ended ({first.returncode})"
        counted = int(pid_file.read_text())
        assert counted != first.pid
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
        # its test sleeps for 600 s: ended within the deadline means ended because its parent did
        assert still_running([counted], deadline_s=30) == []
    finally:
        try:
            os.killpg(first.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if pid_file.exists() and pid_file.read_text():
            kill_all([int(pid_file.read_text())])
