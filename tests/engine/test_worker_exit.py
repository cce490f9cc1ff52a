"""How a worker process ends: it leaves as soon as its result is written, and what it leaves behind
in its process group is killed, so no cell pays for (or waits on) a framework's shutdown and nothing
of one cell runs beside the next."""

import os
import signal
import time

from jitlab_testing import DATA

from jitlab.engine.runner import execute_cell
from jitlab.engine.spec import CellSpec, TimingPolicy


def spec(workload: str) -> CellSpec:
    return CellSpec(
        workload=workload,
        backend="python",
        size=1,
        source_file=str(DATA / "exit_workload.py"),
        threads=1,
        # a budget that fits two processes even when a loaded machine makes a block slow to calibrate
        policy=TimingPolicy(budget_s=1.0, processes=2, startup_in_budget=False),
    )


def _alive(pid: int) -> bool:
    """Running. On Linux a zombie waiting for its reaper counts as gone; elsewhere (no /proc) a
    killed orphan is reaped by init at once, so whether the pid still exists is the answer."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_shutdown_that_never_ends_does_not_fail_the_cell():
    # without leaving at once, each worker would sleep in its atexit handler until the time limit
    result = execute_cell(spec("shutdown_hangs"), timeout_s=30)
    assert result.status == "ok", result.reason
    assert [d["status"] for d in result.process_details] == ["ok", "ok"]
    assert result.values == (1.0,)


def test_what_a_worker_leaves_behind_is_killed_with_it(tmp_path, monkeypatch):
    pid_file = tmp_path / "children"
    monkeypatch.setenv("EXIT_CHILD_PID_FILE", str(pid_file))
    result = execute_cell(spec("leaves_a_child"), timeout_s=60)
    children = [int(line) for line in pid_file.read_text().split()]
    try:
        assert result.status == "ok", result.reason
        assert len(children) == len(result.process_details) == 2  # one child per worker process
        deadline = time.monotonic() + 10  # SIGKILL acts at once; this allows for a loaded machine
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in children if _alive(pid)] == []
    finally:  # never leave them running, whatever failed above
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
