"""A crashing, raising or hanging backend is a failed cell with its reason; the run goes on."""

import json

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
