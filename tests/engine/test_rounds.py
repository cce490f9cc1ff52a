"""A run measures its cells in interleaved rounds: process k of every cell in round k, the drift
canary read before every process, each cell stored after every process, and a cell an interrupted
run stored before its last round measured again by `--resume`."""

from __future__ import annotations

import json

from jitlab_testing import DATA

from jitlab.engine.plan import PlannedCell, is_partial, missing_cells
from jitlab.engine.processes import PARTIAL_WARNING, merge_process_results
from jitlab.engine.rounds import CellState, round_order
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.process_result import ProcessResult
from jitlab.store import Store
from jitlab.store.machine import machine_info

WORKLOAD = str(DATA / "rounds_workload.py")


def test_process_k_of_every_cell_runs_in_round_k(jitlab_cli, store):
    result = jitlab_cli(
        "run", WORKLOAD, "--processes", "3", "--budget", "4", "--store", str(store), "--no-plot", "--json"
    )
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    cells = Store(store, create=False).cells(1)
    assert [(c.backend, c.size) for c in cells] == [("python", 1), ("python", 2), ("numpy", 1), ("numpy", 2)]
    assert all(c.ok for c in cells)
    rounds: dict[int, list[float]] = {}
    readings = 0
    for cell in cells:
        # a process measured in a slow spell (other work on a CI runner) is measured again after
        # the rounds: its replacement is an extra process of round "again", never a fourth round
        details = [d for d in cell.process_details if d["round"] != "again"]
        again = [d for d in cell.process_details if d["round"] == "again"]
        assert [d["process"] for d in details] == [0, 1, 2], cell.warnings
        assert [d["round"] for d in details] == [0, 1, 2]
        assert [d["process"] for d in again] == list(range(3, 3 + len(again)))
        assert len(again) == sum(1 for w in cell.warnings if "which replaces it" in w)
        assert not is_partial(cell)
        for d in cell.process_details:
            assert d["canary"]["python_s"] > 0 and d["canary"]["numpy_s"] > 0
            readings += 1
        for d in details:
            rounds.setdefault(d["round"], []).append(d["canary"]["t"])
    # every process of round k started after every process of round k - 1
    assert max(rounds[0]) < min(rounds[1]) and max(rounds[1]) < min(rounds[2])
    canary = run["canary"][""]
    assert canary["readings"] == readings >= 12 and len(canary["series"]) == readings and canary["drift"] >= 0
    # the closing lines' ratios are per round (three rounds in common): numpy's busy-wait is 30x
    # shorter. A size where a slow spell's process was replaced has fewer than two rounds in
    # common when two were: its ratio is then the ratio of medians, without an interval
    replaced_sizes = {c.size for c in cells if any(d["round"] == "again" for d in c.process_details)}
    for fastest in run["fastest"]:
        assert fastest["backend"] == "numpy" and fastest["ratio"] > 3  # 30 on a quiet machine
        if fastest["size"] not in replaced_sizes:
            assert fastest["ratio_method"] == "per-round"
        if fastest["ratio_method"] == "per-round":
            low, high = fastest["ratio_ci95"]
            assert low <= fastest["ratio"] <= high
        else:
            assert fastest["ratio_method"] == "medians" and fastest["ratio_ci95"] is None
    # a line per finished cell and per round where stderr is not a terminal
    assert "4/4 spin · " in result.stderr
    assert "round 1 done" in result.stderr and "round 2 done" in result.stderr


def _spec(size: int) -> CellSpec:
    return CellSpec("spin", "python", size, source_file=WORKLOAD, policy=TimingPolicy(processes=3))


def test_round_zero_keeps_the_plan_order_and_later_rounds_are_shuffled_by_seed():
    states = [CellState(_spec(n), None, f"cell-{n}") for n in range(1, 13)]
    assert round_order(states, 0, "seed") == states
    first, again = round_order(states, 1, "seed"), round_order(states, 1, "seed")
    assert first == again and sorted(s.spec.size for s in first) == list(range(1, 13))
    assert first != states and first != round_order(states, 2, "seed")


def test_a_partial_cell_is_measured_again_on_resume(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    run_id = store.create_run(WORKLOAD, ["spin"], ["python"], None, {}, machine_info())
    one = ProcessResult.from_dict(
        {
            "status": "ok",
            "samples_s": [1e-3] * 10,
            "process": 0,
            "processes_planned": 3,
            "values": [1.0],
            "round": 0,
        }
    )
    partial = merge_process_results([one], pending=2)
    assert any(w.startswith(PARTIAL_WARNING) for w in partial.warnings)
    store.save_cell(run_id, "spin", "python", 1, {}, partial)
    store.save_cell(run_id, "spin", "python", 2, {}, merge_process_results([one]))
    planned = [PlannedCell(_spec(n)) for n in (1, 2, 3)]
    assert [p.spec.size for p in missing_cells(store, run_id, planned)] == [1, 3]


def test_without_shuffle_every_round_keeps_the_plan_order():
    states = [CellState(_spec(n), None, f"cell-{n}") for n in range(1, 13)]
    assert all(round_order(states, k, "seed", shuffle=False) == states for k in range(3))


def test_a_cold_first_process_does_not_cut_the_rounds_but_dear_extra_ones_do():
    """The rule of `execute_cell`: extra processes stop once they would pass 1.5 budgets; process 0's
    cold first call does not count against them."""
    from jitlab.engine.dispatch import LocalDispatcher
    from jitlab.engine.jobs import Job
    from jitlab.engine.rounds import run_rounds

    spec = CellSpec("spin", "python", 1, policy=TimingPolicy(budget_s=1.0, processes=3))
    walls = {0: 10.0, 1: 2.0, 2: 2.0}  # a 10 s cold compile, then 2 s per extra process

    def process(index):
        samples = [1e-3 * (1 + 0.01 * index)] * 10
        return ProcessResult.from_dict(
            {
                "status": "ok",
                "samples_s": samples,
                "values": [1.0],
                "process": index,
                "processes_planned": 3,
                "wall_s": walls[index],
            }
        )

    def make_job(state, index, spec):
        return Job(state, process, (index,))

    saved = []
    state = CellState(spec, None, "cell")
    run_rounds([state], LocalDispatcher(), make_job, lambda s, r, final: saved.append((r, final)), "seed")
    # stored after round 0 and round 1 (both partial), then final without a round 2: process 1 took
    # 2 s, and another would take the extra processes past 1.5 budgets
    assert [final for _, final in saved] == [False, False, True]
    assert any(w.startswith(PARTIAL_WARNING) for w in saved[0][0].warnings)
    assert [d["process"] for d in saved[-1][0].process_details] == [0, 1]
    assert any("2 of 3 planned processes" in w for w in saved[-1][0].warnings)
