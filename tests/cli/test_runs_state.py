"""`jitlab runs` and `show` say a run failed when it finished without measuring any cell."""

from __future__ import annotations

import json

from jitlab.cli import main
from jitlab.store import Store
from jitlab.store.machine import machine_info


def test_a_run_whose_only_cell_failed_is_shown_as_failed(tmp_path, capsys):
    path = tmp_path / "results.sqlite"
    store = Store(path)
    failed = store.create_run("pi", ["pi"], ["torch"], None, {"threads": 1}, machine_info())
    store.save_cell(failed, "pi", "torch", 1000, {}, {"status": "failed", "reason": "RuntimeError: boom"})
    store.set_run_status(failed, "finished")
    fine = store.create_run("pi", ["pi"], ["numpy"], None, {"threads": 1}, machine_info())
    store.save_cell(
        fine, "pi", "numpy", 1000, {}, {"status": "ok", "samples_s": [1e-3] * 10, "first_call_s": 1e-3}
    )
    store.set_run_status(fine, "finished")
    store.close()

    assert main(["runs", "--store", str(path), "--json"]) == 0
    states = {run["run_id"]: run["state"] for run in json.loads(capsys.readouterr().out)["runs"]}
    assert states == {failed: "failed", fine: "finished"}
    assert main(["runs", "--store", str(path)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "pi" in line and "│" in line]
    assert [("failed" in row, "finished" in row) for row in rows] == [(True, False), (False, True)]
    assert main(["show", str(failed), "--store", str(path)]) == 0
    assert " · failed · " in capsys.readouterr().out.splitlines()[0]
