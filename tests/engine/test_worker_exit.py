"""How a worker process ends: it leaves as soon as its result is written, and what it leaves behind
in its process group is killed, so no cell pays for (or waits on) a framework's shutdown and nothing
of one cell runs beside the next."""

from jitlab_testing import DATA, kill_all, still_running

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
        assert still_running(children, deadline_s=10) == []  # SIGKILL acts at once; 10 s for a loaded machine
    finally:  # never leave them running, whatever failed above
        kill_all(children)
