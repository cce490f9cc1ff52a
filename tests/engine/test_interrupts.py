"""Ctrl-C during a local run is taken at safe points: the first one kills the running worker and is
raised where nothing is half done; a second one is raised at once. Real signals, real processes."""

import os
import signal
import subprocess
import sys
import time

import pytest

from jitlab.engine.interrupts import deferred_interrupts, raise_if_interrupted, watched_worker


@pytest.fixture(autouse=True)
def python_ctrl_c():
    """Python's own Ctrl-C handler, whatever the test runner was started with (a shell's background
    job starts with SIGINT ignored)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)


def test_ctrl_c_is_raised_at_the_next_safe_point_not_where_it_lands():
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler has run: no exception here (a store write would finish)
            reached.append("after the signal")
            raise_if_interrupted()
            reached.append("never")
    assert reached == ["after the signal"]
    # the previous handler is back, and the request is forgotten
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    raise_if_interrupted()


def test_the_running_worker_is_killed_and_one_started_after_ctrl_c_too():
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupts():
            running = _sleeper()
            with watched_worker(running.pid):
                os.kill(os.getpid(), signal.SIGINT)
                assert running.wait(timeout=20) == -signal.SIGKILL
            late = _sleeper()  # started just after the Ctrl-C (inside Popen, say)
            with watched_worker(late.pid):
                assert late.wait(timeout=20) == -signal.SIGKILL
            raise_if_interrupted()


def test_a_second_ctrl_c_raises_at_once():
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # interrupted by the second signal
            pytest.fail("the second Ctrl-C did not raise")


def test_a_block_without_ctrl_c_runs_unchanged():
    with deferred_interrupts():
        worker = _sleeper()
        with watched_worker(worker.pid):
            worker.kill()
            worker.wait(timeout=20)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_ignored_ctrl_c_stays_ignored():
    """Started as a background job (SIGINT ignored), a run is not stopped by the terminal's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with deferred_interrupts():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        raise_if_interrupted()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
