"""`jitlab run --fast`: one process per cell, a short budget and a looser target, marked in the
stored run, and compared with a noise floor of at least 5%."""

from __future__ import annotations

import json

from jitlab_testing import DATA

from jitlab.stats.comparison import FAST_NOISE_FLOOR, compare_with_replicates
from jitlab.store import Store

WORKLOAD = str(DATA / "rounds_workload.py")


def test_a_fast_run_is_marked_and_compared_with_a_wider_noise_floor(jitlab_cli, store):
    for _ in range(2):
        fast = jitlab_cli(
            "run", WORKLOAD, "--backends", "numpy", "--fast", "--store", str(store), "--no-plot"
        )
        assert fast.returncode == 0, fast.stderr
    assert "a quick look (--fast)" in fast.stdout
    run = Store(store, create=False).run(2)
    assert run.options["fast"] is True
    assert run.options["policy"]["processes"] == 1 and run.options["policy"]["budget_s"] == 1.0
    assert run.options["policy"]["target_ci"] == 0.05
    assert all(c.processes == 1 for c in Store(store, create=False).cells(2))
    compared = jitlab_cli("compare", "1", "2", "--store", str(store), "--json")
    assert compared.returncode == 0, compared.stderr
    for cell in json.loads(compared.stdout)["cells"]:
        # one process per cell: the floor is its samples' own spread, at least the --fast floor
        assert cell["margin"]["value"] >= FAST_NOISE_FLOOR
        assert cell["margin"]["kind"] in ("one-process floor", "noise floor of a --fast run")
        assert cell["verdict"] in ("same", "faster", "slower", "undecided")
    refused = jitlab_cli("run", WORKLOAD, "--resume", "1", "--fast", "--store", str(store))
    assert refused.returncode == 2 and "--fast" in refused.stderr


def test_a_4_percent_change_is_not_called_between_fast_runs_but_is_otherwise():
    a = [1.0 + 0.001 * (i % 5) + 0.0002 * (i // 10) for i in range(40)]
    b = [x * 1.04 for x in a]
    process = [i // 10 for i in range(40)]
    plain, _ = compare_with_replicates(a, b, process_a=process, process_b=process)
    assert plain.verdict == "slower"
    fast, _ = compare_with_replicates(a, b, process_a=process, process_b=process, fast=True)
    assert fast.verdict == "undecided" and "noise floor of a --fast run ±5.0%" in fast.reason
    # one process per side: the one-process floor, 5% too
    assert compare_with_replicates(a, b)[0].verdict == "undecided"
    # an explicit threshold still decides
    explicit, _ = compare_with_replicates(a, b, threshold=0.02, fast=True)
    assert explicit.verdict == "slower" and explicit.margin_kind == "threshold"


def _cell(run_id, python_s):
    from jitlab.store import CellRecord

    details = tuple(
        {"process": k, "canary": {"t": float(k), "python_s": python_s, "numpy_s": 0.0015}} for k in range(3)
    )
    samples = tuple(1e-3 * (1 + 0.001 * (i % 7)) for i in range(30))
    return CellRecord(
        run_id, "w", "numpy", 10, {}, "ok", None, samples_s=samples, sample_process=tuple(i // 10 for i in range(30)),
        process_details=details,
    )  # fmt: skip


def test_compare_says_how_much_slower_the_machine_ran_during_run_b():
    from jitlab.compare.runs import compare_cells
    from jitlab.store import RunRecord

    run_a = RunRecord(1, "t", None, "finished", "w", ("w",), (), None, {}, {})
    run_b = RunRecord(2, "t", None, "finished", "w", ("w",), (), None, {}, {})
    comparison = compare_cells(run_a, run_b, [_cell(1, 0.034)], [_cell(2, 0.057)])
    (shift,) = comparison.canary_shift.values()
    assert abs(shift["python_s"] - (0.057 / 0.034 - 1)) < 1e-9 and shift["numpy_s"] == 0.0
    (note,) = comparison.notes
    assert note.startswith("drift canary on this machine: its pure-Python probe took +67.6%")
    assert comparison.to_json()["canary_shift"] == comparison.canary_shift
