"""A crashing, raising or hanging backend is a failed cell with its reason; the run goes on."""

import json
import sqlite3

from jitlab_testing import DATA


def test_exception_signal_and_timeout_are_recorded_and_the_run_goes_on(jitlab_cli, store):
    result = jitlab_cli(
        "run",
        str(DATA / "faulty_workload.py"),
        "--backends",
        "python,numpy,numba,jax",
        "--timeout",
        "20",
        "--budget",
        "0.1",
        "--store",
        str(store),
        "--json",
        env={"FAULTY_HANG_S": "600"},
    )
    assert result.returncode == 0, result.stderr
    cells = {c["backend"]: c for c in json.loads(result.stdout)["cells"]}
    assert cells["python"]["status"] == "ok"
    assert cells["python"]["error"] == 0.0
    assert cells["numpy"]["status"] == "failed"
    assert "ValueError: deliberate failure in the user's code" in cells["numpy"]["reason"]
    assert cells["numba"]["status"] == "failed"
    assert "SIGABRT" in cells["numba"]["reason"]
    assert cells["jax"]["status"] == "timeout"
    assert "20 s" in cells["jax"]["reason"]


def test_a_failed_cell_keeps_the_workers_traceback(jitlab_cli, store):
    # python measures fine: a run that measured nothing at all would exit 1 (see test_exit_codes)
    args = ("run", str(DATA / "faulty_workload.py"), "--backends", "python,numpy", "--budget", "0.1")
    plain = jitlab_cli(*args, "--store", str(store))
    assert plain.returncode == 0, plain.stderr
    assert "Traceback" not in plain.stderr  # without --debug, the table's one-line reason only
    with sqlite3.connect(store) as conn:
        (log,) = conn.execute("SELECT log FROM cells WHERE backend = 'numpy'").fetchone()
    assert "Traceback (most recent call last)" in log
    assert "ValueError: deliberate failure in the user's code" in log
    assert "faulty_workload.py" in log  # the user's frame
    debug = jitlab_cli("--debug", *args, "--store", str(store))
    assert debug.returncode == 0
    assert "Traceback (most recent call last)" in debug.stderr and "faulty_workload.py" in debug.stderr
