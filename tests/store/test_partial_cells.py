"""A cell stored before its last round keeps that state as a field (`pending_processes`), which
`jitlab run --resume` reads; cells of older stores, which said so only in a warning, still count."""

from jitlab.engine.plan import PlannedCell, missing_cells
from jitlab.engine.spec import CellSpec
from jitlab.store import Store
from jitlab.store.machine import machine_info
from jitlab.store.records import PARTIAL_WARNING


def result(pending: int, warnings=()) -> dict:
    return {
        "status": "ok", "samples_s": [1e-3, 1.1e-3, 0.9e-3, 1e-3], "sample_process": [0, 0, 1, 1],
        "process_details": [{"process": 0, "round": 0, "status": "ok"}, {"process": 1, "round": 1, "status": "ok"}],
        "pending_processes": pending, "warnings": list(warnings),
    }  # fmt: skip


def test_pending_processes_survive_the_store_and_make_a_cell_partial(tmp_path):
    store = Store(str(tmp_path / "s.db"))
    run = store.create_run("w", ["w"], ["python"], [1, 2, 3], {}, machine_info())
    store.save_cell(run, "w", "python", 1, {}, result(pending=2))
    store.save_cell(run, "w", "python", 2, {}, result(pending=0))
    store.save_cell(run, "w", "python", 3, {}, result(0, [f"{PARTIAL_WARNING}2 of 4 planned processes"]))
    cells = {c.size: c for c in store.cells(run)}
    assert cells[1].pending_processes == 2 and cells[1].partial
    assert cells[2].pending_processes == 0 and not cells[2].partial
    assert cells[3].partial  # an older store's cell: only its warning says so
    planned = [PlannedCell(CellSpec("w", "python", n)) for n in (1, 2, 3)]
    assert [p.spec.size for p in missing_cells(store, run, planned)] == [1, 3]
