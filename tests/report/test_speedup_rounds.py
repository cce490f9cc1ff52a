"""Speed-up tables (workloads that declare a baseline: sampler, async) take each speed-up from the
same rounds, with its 95% interval, in the terminal, `--json` and the HTML report; cells without
rounds in common keep the ratio of medians and say so. And the HTML report folds warnings by cause
as the terminal does, each cell's own warnings in a collapsed element."""

from __future__ import annotations

import json
import re

import jsonschema
import numpy as np
import pytest
from rich.console import Console

from jitlab.cli import main
from jitlab.report.derived import derived_grids, run_derived
from jitlab.report.speedup import speedup_table, speedups
from jitlab.schemas import load_schema
from jitlab.store import CellRecord, RunRecord, Store
from jitlab.store.machine import machine_info
from jitlab.workloads.async_steps import baseline as async_baseline
from jitlab.workloads.sampler import baseline as sampler_baseline

#: the machine's speed in rounds 0, 1, 2: 1.7x apart, as on a drifting shared VM
DRIFT = (1.0, 1.7, 1.2)


def measured(per_call: float, counts: tuple[int, ...], rounds: bool = True, seed: int = 0) -> dict:
    """A cell's stored result: process k measured in round k at the machine's speed then, with
    `counts[k]` samples (processes differ in how many samples their budget paid for)."""
    rng = np.random.default_rng(seed)
    samples, index, details = [], [], []
    for k, (speed, count) in enumerate(zip(DRIFT, counts, strict=True)):
        samples += list(per_call * speed * rng.lognormal(0, 0.003, count))
        index += [k] * count
        details.append({"process": k, "status": "ok", "round": k if rounds else None})
    return {"status": "ok", "samples_s": samples, "sample_process": index, "process_details": details}


def record(
    backend: str, params: dict, result: dict, workload: str = "sampler", size: int = 1000
) -> CellRecord:
    return CellRecord(
        1,
        workload,
        backend,
        size,
        params,
        "ok",
        None,
        samples_s=tuple(result["samples_s"]),
        sample_process=tuple(result["sample_process"]),
        process_details=tuple(result["process_details"]),
    )


def sampler_cells(rounds: bool = True) -> list[CellRecord]:
    # the baseline's slow round 1 paid for most of its samples, the compiled cell's fast round 0:
    # the pooled medians land in different rounds and their ratio carries the drift
    return [
        record("torch", {"variant": "naive"}, measured(4.0, (10, 40, 10), rounds, seed=1)),
        record("torch-compile", {"variant": "static"}, measured(1.0, (40, 10, 10), rounds, seed=2)),
    ]


def test_a_speed_up_is_the_per_round_ratio_with_its_interval():
    base, fast = sampler_cells()
    (s,) = [s for s in speedups([base, fast], sampler_baseline) if not s.is_baseline]
    assert base.summary.median / fast.summary.median > 6  # the ratio of medians: 4 × the drift
    assert s.round_ratio.method == "per-round" and s.round_ratio.rounds == 3
    assert s.ratio == pytest.approx(4.0, rel=0.01)
    assert 3.9 < s.round_ratio.ci_low < 4.0 < s.round_ratio.ci_high < 4.1
    row = s.to_json()
    assert row["speedup"] == pytest.approx(4.0, rel=0.01) and row["speedup_method"] == "per-round"
    assert row["speedup_ci95"] == [s.round_ratio.ci_low, s.round_ratio.ci_high] and row["rounds"] == 3


def test_the_terminal_table_prints_the_interval_like_the_fastest_lines():
    cells = sampler_cells()
    run = RunRecord(1, "now", None, "finished", "sampler", ("sampler",), (), None, {}, {})
    console = Console(record=True, width=300)
    console.print(speedup_table(run, "sampler", speedups(cells, sampler_baseline)))
    text = console.export_text()
    assert re.search(r"4\.0\d× \[3\.9\d, 4\.\d\d\]", text) and "(medians)" not in text


def test_cells_without_rounds_keep_the_ratio_of_medians_and_say_so():
    base, fast = sampler_cells(rounds=False)
    (s,) = [s for s in speedups([base, fast], sampler_baseline) if not s.is_baseline]
    assert s.round_ratio.method == "medians" and s.round_ratio.ci_low is None
    assert s.ratio == pytest.approx(base.summary.median / fast.summary.median)
    row = s.to_json()
    assert row["speedup_ci95"] is None and row["speedup_method"] == "medians"
    run = RunRecord(1, "now", None, "finished", "sampler", ("sampler",), (), None, {}, {})
    console = Console(record=True, width=300)
    console.print(speedup_table(run, "sampler", [s]))
    assert f"{s.ratio:.2f}× (medians)" in console.export_text()


def async_run(store: Store, rounds: bool = True) -> int:
    """An async run: waiting once against waiting after every step, on jax."""
    run_id = store.create_run("async", ["async"], ["jax"], None, {"threads": 1}, machine_info())
    for sync, per_call, counts, seed in (
        ("every-step", 3.0, (10, 40, 10), 3),
        ("once", 1.0, (40, 10, 10), 4),
    ):
        result = measured(per_call, counts, rounds, seed)
        store.save_cell(run_id, "async", "jax", 10_000, {"sync": sync}, result)
    store.set_run_status(run_id, "finished")
    return run_id


def test_json_and_html_carry_the_per_round_speed_up(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    run_id = async_run(store)
    cells = store.cells(run_id)
    (derived,) = run_derived(store.run(run_id), cells)
    (grid,) = derived_grids(derived)
    (row,) = [r for r in grid.rows if r[0] == "jax (sync=once)"]
    assert re.fullmatch(r"3\.0\d× \[2\.9\d, 3\.\d\d\]", row[1])
    assert [async_baseline("jax", {"sync": "once"})] == [("jax", {"sync": "every-step"})]
    store.close()

    assert main(["show", str(run_id), "--json", "--store", str(path)]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, load_schema("run"), cls=jsonschema.Draft202012Validator)
    (once,) = [r for r in document["derived"][0]["speedups"] if r["params"] == {"sync": "once"}]
    assert once["speedup_method"] == "per-round" and once["speedup"] == pytest.approx(3.0, rel=0.01)
    assert once["speedup_ci95"][0] < 3.0 < once["speedup_ci95"][1]

    assert main(["report", str(run_id), "-o", str(tmp_path / "html"), "--store", str(path)]) == 0
    html = (tmp_path / "html" / "index.html").read_text()
    assert "async: speed-up against the baseline" in html
    assert re.search(r'<td class="num">3\.0\d× \[2\.9\d, 3\.\d\d\]</td>', html)


def test_old_runs_show_the_ratio_of_medians_in_the_report(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    run_id = async_run(store, rounds=False)
    store.close()
    assert main(["show", str(run_id), "--json", "--store", str(path)]) == 0
    (once,) = [
        r
        for r in json.loads(capsys.readouterr().out)["derived"][0]["speedups"]
        if r["params"] == {"sync": "once"}
    ]
    assert once["speedup_method"] == "medians" and once["speedup_ci95"] is None
    assert main(["show", str(run_id), "--store", str(path)]) == 0
    assert "× (medians)" in capsys.readouterr().out


CI_WARNING = "CI ±31.0% after 40 samples in 3 processes, target ±2% (the spread between processes counts)"


def test_the_html_report_folds_warnings_by_cause_and_keeps_each_cells_own(tmp_path):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    run_id = store.create_run("w", ["w"], ["numpy"], None, {"threads": 1}, machine_info())
    sizes = [10 * (k + 1) for k in range(23)]
    for k, size in enumerate(sizes):
        result = measured(1e-3, (10, 10, 10), seed=k)
        result["warnings"] = [CI_WARNING, f"process 1: unstable: IQR {10 + k}% of the median"]
        store.save_cell(run_id, "w", "numpy", size, {}, result)
    store.set_run_status(run_id, "finished")
    store.close()
    assert main(["report", str(run_id), "-o", str(tmp_path / "html"), "--store", str(path)]) == 0
    html = (tmp_path / "html" / "index.html").read_text()
    folded = html[html.index('<ul class="folded">') : html.index("</ul>", html.index('<ul class="folded">'))]
    assert folded.count("<li>") == 2  # one line per cause, not one per cell
    assert html.count("23 cells: processes disagree") == 1 and "19 more]" in folded
    assert html.count("23 cells: unstable") == 1
    details = html[html.index('<details class="cell-warnings">') : html.index("</details>")]
    assert "every warning, cell by cell (23 cells)" in details
    assert details.count(CI_WARNING) == 23  # every cell's own warnings, collapsed
    for k, size in enumerate(sizes):
        assert f"process 1: unstable: IQR {10 + k}% of the median" in details
        assert f"<strong>numpy n={size}</strong>" in details
    assert html.count(CI_WARNING) == 23  # nowhere outside the collapsed list
