"""An interrupted run keeps its finished cells; `--resume RUN_ID` measures only what is missing."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from jitlab_testing import DATA, kill_all, process_alive, still_running


def _cells(store):
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT backend, status, finished_at FROM cells ORDER BY backend").fetchall()


def _run_status(store, run_id):
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT status FROM runs WHERE id=?", (run_id,)).fetchone()[0]


def _start(store, signal_env):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitlab",
            "run",
            str(DATA / "slow_workload.py"),
            "--backends",
            "python,numpy",
            "--budget",
            "0.05",
            "--store",
            str(store),
            "--no-plot",
        ],
        env={**os.environ, **signal_env},
        # Ctrl-C as in a terminal, even where the tests run as a background job (SIGINT ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_cells(store, count, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        if store.exists():
            try:
                if len(_cells(store)) >= count:
                    return
            except sqlite3.OperationalError:
                pass
        time.sleep(0.2)
    raise AssertionError("the first cell never finished")


def test_ctrl_c_keeps_finished_cells_and_resume_runs_the_rest(tmp_path, jitlab_cli):
    store = tmp_path / "s.sqlite"
    process = _start(store, {"SLOW_S": "300"})
    _wait_for_cells(store, 1)
    time.sleep(1.0)  # the slow cell's worker is running now
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert "--resume 1" in err
    kept = _cells(store)
    assert [(b, s) for b, s, _ in kept] == [("python", "ok")]
    assert _run_status(store, 1) == "interrupted"

    resumed = jitlab_cli(
        "run",
        str(DATA / "slow_workload.py"),
        "--resume",
        "1",
        "--store",
        str(store),
        "--json",
        env={"SLOW_S": "0"},
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["run_id"] == 1
    after = _cells(store)
    assert [(b, s) for b, s, _ in after] == [("numpy", "ok"), ("python", "ok")]
    # the python cell was not measured again
    assert dict((b, f) for b, _, f in after)["python"] == kept[0][2]
    assert _run_status(store, 1) == "finished"


def _wait_for_pids(path, count, process, timeout=120):
    """The pids the slow cell's worker wrote (its own, its child's) once both are there."""
    end = time.time() + timeout
    while time.time() < end and process.poll() is None:
        pids = path.read_text().split() if path.exists() else []
        if len(pids) >= count:
            return [int(pid) for pid in pids[:count]]
        time.sleep(0.2)
    process.kill()
    raise AssertionError(f"the slow cell's worker never started (exit {process.poll()})")


def test_killed_run_keeps_finished_cells_and_leaves_no_worker(tmp_path):
    """`jitlab run` killed by SIGKILL (the OOM killer, `kill -9`, a cancelled CI job) can neither
    store nor stop anything: what finished is kept, and its worker, in a session of its own, goes
    by itself with the child it started (jitlab.lifeline)."""
    store, pid_file = tmp_path / "s.sqlite", tmp_path / "pids"
    process = _start(store, {"SLOW_S": "300", "SLOW_PIDS": str(pid_file)})
    worker_and_child = _wait_for_pids(pid_file, 2, process)
    try:
        assert all(process_alive(pid) for pid in worker_and_child)  # running before the kill
        process.kill()
        process.communicate(timeout=60)
        # the worker sleeps for 300 s: ended within the deadline means ended because its parent did
        assert still_running(worker_and_child, deadline_s=30) == []
        assert [(b, s) for b, s, _ in _cells(store)] == [("python", "ok")]
    finally:  # never leave them running, whatever failed above
        kill_all(worker_and_child)


def test_resume_with_another_target_is_refused(tmp_path, jitlab_cli):
    store = tmp_path / "s.sqlite"
    ok = jitlab_cli(
        "run", "pi", "--backends", "numpy", "--sizes", "1e3", "--budget", "0.05", "--store", str(store)
    )
    assert ok.returncode == 0
    refused = jitlab_cli("run", str(DATA / "slow_workload.py"), "--resume", "1", "--store", str(store))
    assert refused.returncode == 2 and "give the same target" in refused.stderr
