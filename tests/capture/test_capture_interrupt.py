"""Ctrl-C during `jitlab capture` keeps the cases that finished: they are reported (tables or JSON
marked interrupted, with the unfinished cases listed), every worker is killed, and the exit code is 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jitlab_testing import still_running

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def markers(tmp_path):
    """The folder where hanging cases write their worker's pid; whatever is left running is killed after."""
    yield tmp_path
    for marker in tmp_path.iterdir():
        try:
            os.killpg(int(marker.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _start(markers: Path, *args: str, background: bool = False) -> subprocess.Popen:
    """`jitlab capture` of the slow corpus; Ctrl-C as in a terminal, even where the tests run as a
    background job, unless `background`: then SIGINT is ignored, as in a shell's background job."""
    interrupt = signal.SIG_IGN if background else signal.SIG_DFL
    return subprocess.Popen(
        [sys.executable, "-m", "jitlab", "capture", str(DATA / "slow_corpus.py"), "--timeout", "500", *args],
        env={**os.environ, "SLOW_MARKERS": str(markers)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, interrupt),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _interrupt_once_hanging(
    process: subprocess.Popen, markers: Path, names: list[str], sig: int = signal.SIGINT
) -> list[int]:
    """Wait until every case in `names` hangs in its worker, press Ctrl-C (or send `sig`); the
    hanging workers' pids."""
    end = time.time() + 240
    while not all((markers / name).exists() for name in names):
        if process.poll() is not None or time.time() > end:
            process.kill()
            out, err = process.communicate()
            raise AssertionError(
                f"the hanging cases never started (exit {process.returncode}): {err[-2000:]}"
            )
        time.sleep(0.2)
    time.sleep(0.5)  # the pid is written
    process.send_signal(sig)
    return [int((markers / name).read_text()) for name in names]


def _gone(pid: int) -> bool:
    end = time.time() + 10
    while time.time() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _finish(process: subprocess.Popen) -> tuple[str, str]:
    try:
        return process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("jitlab capture did not stop within 60 s of Ctrl-C") from None


@pytest.mark.parametrize(
    "sig, background", [(signal.SIGINT, False), (signal.SIGTERM, True)], ids=["ctrl-c", "sigterm-background"]
)
def test_ctrl_c_with_two_workers_reports_the_finished_cases_in_json(markers, sig, background):
    """Also SIGTERM (`kill`, a scheduler's time limit) to a background job, where Ctrl-C is ignored."""
    process = _start(markers, "--methods", "fx,trace", "--jobs", "2", "--json", background=background)
    pids = _interrupt_once_hanging(process, markers, ["hangs_a", "hangs_b"], sig)
    out, err = _finish(process)
    assert process.returncode == 130, err
    assert all(_gone(pid) for pid in pids), "a worker outlived the interrupted capture"
    report = json.loads(out)
    assert report["interrupted"] is True
    assert [case["name"] for case in report["cases"]] == ["quick_a", "quick_b"]
    assert report["unfinished"] == ["hangs_a", "hangs_b", "never_started_a", "never_started_b"]
    for case in report["cases"]:
        assert case["results"]["fx"]["captured"] and case["results"]["trace"]["captured"]
    assert report["totals"]["fx"]["cases"] == 2 and report["totals"]["fx"]["captured"] == 2
    assert report["broken"] == []  # the killed cases are not reported as failing eagerly
    assert "interrupted: 2 of 6 case(s) finished every method" in err


@pytest.mark.parametrize("speed", [False, True], ids=["coverage", "speed"])
def test_ctrl_c_with_one_worker_prints_the_finished_cases(markers, speed):
    args = ["--speed", "--backend", "eager", "--budget", "0.05"] if speed else ["--methods", "fx"]
    process = _start(markers, "--cases", "quick_a,hangs_a,never_started_a", "--details", *args)
    (pid,) = _interrupt_once_hanging(process, markers, ["hangs_a"])
    out, err = _finish(process)
    assert process.returncode == 130, err
    assert _gone(pid)
    assert "quick_a" in out and "hangs_a" not in out and "never_started_a" not in out
    assert "interrupted: 1 of 3 case(s) finished every method" in err


def test_a_capture_killed_by_sigkill_leaves_no_worker(markers):
    """SIGKILL (the OOM killer, a cancelled CI job) cannot be taken: the capture's worker, in a
    session of its own, goes by itself when its parent is gone (jitlab.lifeline)."""
    process = _start(markers, "--cases", "hangs_a", "--methods", "fx")
    (pid,) = _interrupt_once_hanging(process, markers, ["hangs_a"], signal.SIGKILL)
    process.communicate(timeout=60)
    # the case sleeps for 600 s: ended within the deadline means ended because its parent did
    assert still_running([pid], deadline_s=30) == [], "the worker outlived the killed capture"
