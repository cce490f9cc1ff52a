"""A worker dies with its parent, however the parent dies (jitlab.lifeline): real processes, a
parent killed with SIGKILL, deadlines generous enough for a loaded machine."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from jitlab_testing import kill_all, process_alive, still_running

from jitlab.lifeline import lifeline

# a worker: holds the lifeline, starts a child in its process group, says who is who, then sleeps
WORKER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from jitlab import lifeline
    lifeline.hold_lifeline()
    child = subprocess.Popen(["sleep", "600"])
    with open(sys.argv[1], "a") as f:
        f.write(f"{os.getpid()} {child.pid} {lifeline.guard_pid() or 0}\\n")
    time.sleep(600)
    """
)

# a parent: starts two workers from thread-pool threads (as `capture --jobs` does), each in a session
# of its own unless told "shared", and waits for them
PARENT = textwrap.dedent(
    """
    import os, subprocess, sys
    from concurrent.futures import ThreadPoolExecutor
    from jitlab.lifeline import lifeline

    def start(_):
        with lifeline() as line:
            worker = subprocess.Popen(
                [sys.executable, "-c", sys.argv[1], sys.argv[2]],
                env={**os.environ, **line.env},
                pass_fds=line.pass_fds,
                start_new_session=sys.argv[3] != "shared",
            )
            worker.wait()

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(start, range(2)))
    """
)


def _wait_for_lines(path, count, process, timeout=120):
    end = time.time() + timeout
    while time.time() < end and process.poll() is None:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return [[int(pid) for pid in line.split()] for line in lines[:count]]
        time.sleep(0.1)
    process.kill()
    raise AssertionError(f"the workers never started (parent exit {process.poll()})")


def test_workers_their_children_and_guards_go_when_the_parent_is_killed(tmp_path):
    pids_file = tmp_path / "pids"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, WORKER, str(pids_file), "own"])
    workers = _wait_for_lines(pids_file, 2, parent)
    every_pid = [pid for worker in workers for pid in worker]
    try:
        # started from pool threads that wait: the parent-death signal has not fired, nothing ended
        time.sleep(0.5)
        assert all(process_alive(pid) for pid in every_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=60)
        # each worker sleeps for 600 s: ended within the deadline means ended because its parent did
        assert still_running(every_pid, deadline_s=30) == []
    finally:  # never leave them running, whatever failed above
        kill_all(every_pid)


def test_a_worker_in_its_parents_process_group_goes_alone(tmp_path):
    """A worker that does not lead its group (a machine probe) kills itself only: never the group
    it shares with its parent, and no guard process."""
    pids_file = tmp_path / "pids"
    # the parent in a session of its own: the group the workers share is not this test's
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, WORKER, str(pids_file), "shared"], start_new_session=True
    )
    workers = _wait_for_lines(pids_file, 2, parent)
    every_pid = [pid for worker in workers for pid in worker[:2]]
    try:
        assert [guard for _, _, guard in workers] == [0, 0]
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=60)
        assert still_running([worker for worker, _, _ in workers], deadline_s=30) == []
    finally:
        kill_all(every_pid)


def test_a_worker_that_ends_normally_reaps_its_guard(tmp_path):
    worker = textwrap.dedent(
        """
        import os
        from jitlab import lifeline
        lifeline.hold_lifeline()
        guard = lifeline.guard_pid()
        assert os.waitpid(guard, os.WNOHANG) == (0, 0)  # running, waiting for the parent to go
        lifeline.release_lifeline()
        try:
            os.waitpid(guard, os.WNOHANG)
        except ChildProcessError:
            print("reaped")
        """
    )
    with lifeline() as line:
        done = subprocess.run(
            [sys.executable, "-c", worker],
            env={**os.environ, **line.env},
            pass_fds=line.pass_fds,
            start_new_session=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["reaped"]


def test_a_worker_started_without_a_lifeline_starts_no_guard():
    worker = "from jitlab import lifeline; lifeline.hold_lifeline(); print(lifeline.guard_pid())"
    env = {key: value for key, value in os.environ.items() if key != "JITLAB_LIFELINE_FD"}
    done = subprocess.run(
        [sys.executable, "-c", worker], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None"]
