"""The run's table at a glance: one symbol per cell, warnings folded into a line per cause, no CI
wider than the value printed, and the canary's drift named when it is more than the cells' CIs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from rich.console import Console

from jitlab.report import folding
from jitlab.report.table import cell_text, print_run
from jitlab.store import CellRecord, RunRecord

CI_WARNING = "CI ±31.0% after 40 samples in 3 processes, target ±2% (the spread between processes counts)"


def cell(backend, size, warnings=(), spread=0.001, python_times=(0.034, 0.034, 0.034), seed=0):
    rng = np.random.default_rng(seed)
    samples, index, details = [], [], []
    for k, t in enumerate(python_times):
        samples += list(1e-3 * np.exp(rng.normal(0, spread)) * rng.lognormal(0, 0.001, 10))
        index += [k] * 10
        canary = {"t": 1000.0 + 10 * k + size, "python_s": t, "numpy_s": 0.0015}
        details.append({"process": k, "status": "ok", "round": k, "canary": canary})
    return CellRecord(
        1,
        "w",
        backend,
        size,
        {},
        "ok",
        None,
        samples_s=tuple(samples),
        sample_process=tuple(index),
        process_details=tuple(details),
        warnings=tuple(warnings),
    )


def run() -> RunRecord:
    return RunRecord(1, "now", None, "finished", "w", ("w",), (), None, {}, {})


def test_one_symbol_per_cell_by_its_most_important_cause():
    both = cell("numpy", 1, [CI_WARNING, "unstable: IQR 12% of the median"])
    assert folding.cell_causes(both) == ["disagree", "unstable"]
    assert cell_text(both).plain.endswith(" ~") and cell_text(both).plain.count("~") == 1
    other = cell("numpy", 2, ["process 2: not settled after warm-up"])
    assert folding.cell_symbol(other) == "!"
    assert folding.cell_symbol(cell("numpy", 3)) == ""


def test_warnings_fold_into_one_line_per_cause():
    cells = [
        cell("numpy", n, [CI_WARNING, f"process 1: unstable: IQR {10 + n}% of the median"]) for n in range(23)
    ]
    cells.append(cell("jax", 1, ["error from 3 seeds only (budget)"]))
    headline, *lines = folding.folded_lines(cells)
    # most cells carry warnings: one headline names the likeliest cause and what to do
    assert headline.startswith("‼ most cells (24 of 24) carry warnings: most often processes disagree")
    assert "raise --budget" in headline
    assert len(lines) == 3
    assert lines[0].startswith("~ 23 cells: processes disagree") and "19 more]" in lines[0]
    assert lines[1].startswith("! 23 cells: unstable")
    assert lines[2] == "! 1 cell: error from 3 seeds only (budget) [jax n=1]"


def test_a_ci_wider_than_the_value_is_not_printed_and_the_line_says_why():
    wide = cell("python", 1, [CI_WARNING], spread=1.0, seed=3)
    assert folding.wide(wide) and "±" not in cell_text(wide).plain
    _, line = folding.folded_lines([wide])
    assert "1 with a CI wider than the value: shown without one" in line


def test_drift_is_named_when_it_is_more_than_the_cells_intervals():
    drifting = [cell("numpy", n, [CI_WARNING], python_times=(0.034, 0.057, 0.034), seed=n) for n in range(4)]
    headline, *lines = folding.folded_lines(drifting)
    assert headline.startswith("‼ most cells (4 of 4) carry warnings: the machine's own speed drifted")
    assert lines[0].startswith("≈ this machine's speed drifted") and "pure Python" in lines[0]
    drift = folding.drift_by_machine(drifting)[""]
    assert abs(drift.by_probe["python_s"] - (0.057 / 0.034 - 1)) < 0.25
    steady = [cell("numpy", n, seed=n) for n in range(4)]
    assert not any(line.startswith("≈") for line in folding.folded_lines(steady))
    assert folding.drift_json(steady)[""]["warning"] is False


def test_every_warning_is_still_printed_with_details():
    cells = [cell("numpy", n, [CI_WARNING]) for n in range(3)]
    console = Console(record=True, width=200)
    print_run(console, run(), cells, details=False)
    short = console.export_text()
    console = Console(record=True, width=200)
    print_run(console, run(), cells, details=True)
    full = console.export_text()
    assert short.count("CI ±31.0%") == 0 and full.count("CI ±31.0%") == 3
    assert "machine speed (drift canary, 9 readings" in full


def busy_load(wait_share):
    return {
        "seconds": 1.0,
        "wait_share": wait_share,
        "steal_share": 0.0,
        "cpu_share": 0.4,
        "loadavg": 4.2,
        "cpus": 2,
    }


def test_a_busy_machine_gets_one_headline_naming_the_load_and_at_most_eight_lines():
    cells = []
    for n in range(12):
        c = cell("numpy", n, [CI_WARNING, f"odd warning number {n} of its own kind" * (n % 2), "x" * n])
        details = tuple({**d, "load": busy_load(0.2 + 0.03 * n)} for d in c.process_details)
        cells.append(CellRecord(**{**c.__dict__, "process_details": details}))
    lines = folding.folded_lines(cells)
    assert len(lines) <= folding.MAX_TOTAL_LINES
    assert lines[0].startswith("‼ most cells (12 of 12) carry warnings: the machine was busy while 12")
    assert "waited 53% of its time for a CPU, load 4.2 on 2 CPUs" in lines[0]
    assert "--measure instructions" in lines[0]
    assert lines[-1].startswith("… ") and "see --details" in lines[-1]
    quiet = [cell("numpy", n, ["not settled after warm-up"] if n == 0 else []) for n in range(4)]
    assert not folding.folded_lines(quiet)[0].startswith("‼")


def test_a_partial_cell_folds_by_its_state_and_an_old_one_by_its_warning():
    note = "partial: 1 of 3 planned processes measured so far"
    partial = replace(cell("numpy", 1, [note]), pending_processes=2)
    old = cell("numpy", 2, [note])  # stored before `pending_processes` existed: only its warning says so
    short = cell("numpy", 3, ["1 of 3 planned processes: the extra ones took longer than planned"])
    assert folding.cell_causes(partial) == folding.cell_causes(old) == ["partial"]
    assert folding.cell_causes(short) == ["fewer"]
    assert folding.cell_symbol(partial) == "…" and list(partial.warnings) == [note]
    (line,) = [f for f in folding.folds([partial, old, short]) if f.cause.key == "partial"]
    assert len(line.cells) == 2 and line.text.startswith("measured in fewer rounds than planned")
