"""Output read at a glance: one line per cell in the terminal table (the rest behind --details), a
closing line naming the fastest backend per size and its ratio to NumPy or the baseline, the derived
tables in the HTML report, and `jitlab.notebook` reachable from `import jitlab`."""

from __future__ import annotations

import re
import subprocess
import sys
import zlib

import numpy as np
import pytest
from jitlab_testing import DATA

from jitlab.cli import main
from jitlab.report.fastest import fastest_cells, fastest_lines
from jitlab.store import CellRecord, Store


def cell(
    backend: str, size: int, median: float, params: dict | None = None, spread: float = 0.01
) -> CellRecord:
    rng = np.random.default_rng(zlib.crc32(f"{backend}/{size}".encode()))  # hash() differs per process
    samples = tuple(median * rng.lognormal(0, spread, 30))
    return CellRecord(1, "w", backend, size, params or {}, "ok", None, first_call_s=0.5, samples_s=samples)


def test_fastest_is_compared_with_numpy_else_the_runner_up():
    cells = [cell("python", 10, 5.0), cell("numpy", 10, 1.0), cell("jax", 10, 0.25), cell("python", 20, 5.0)]
    by_size = {f.size: f for f in fastest_cells("w", cells)}
    assert by_size[10].cell.backend == "jax" and by_size[10].reference_kind == "numpy"
    assert by_size[10].ratio == pytest.approx(4.0, rel=0.05)
    assert by_size[20].reference is None  # a single cell: nothing to compare with
    numpy_wins = {f.size: f for f in fastest_cells("w", cells[:2])}[10]
    assert numpy_wins.cell.backend == "numpy" and numpy_wins.reference_kind == "runner-up"
    (line,) = fastest_lines(fastest_cells("w", cells))
    assert line.startswith("fastest · w: n=10 jax 2") and "4.0" in line and "faster than numpy" in line


def test_overlapping_intervals_are_called_a_tie():
    cells = [cell("numpy", 10, 1.0, spread=0.3), cell("jax", 10, 0.98, spread=0.3)]
    (f,) = fastest_cells("w", cells)
    (other,) = f.tied
    assert {f.cell.backend, other.backend} == {"numpy", "jax"}
    line = fastest_lines([f])[0]
    assert f"tied with {other.backend} (the order is not established at 95%)" in line
    assert "faster" not in line  # a tie and a speed-up are never said of one pair


def test_with_a_baseline_cells_sharing_it_compete():
    def baseline(backend, params):
        batched = params["variant"].startswith("batched")
        return "torch", {"variant": "batched-naive" if batched else "naive"}

    cells = [
        cell("torch", 10, 4.0, {"variant": "naive"}),
        cell("torch-compile", 10, 1.0, {"variant": "static"}),
        cell("torch", 10, 40.0, {"variant": "batched-naive"}),
        cell("torch-compile", 10, 8.0, {"variant": "batched-static"}),
    ]
    found = {f.group: f for f in fastest_cells("w", cells, baseline)}
    assert set(found) == {"against torch (variant=naive)", "against torch (variant=batched-naive)"}
    single = found["against torch (variant=naive)"]
    assert single.cell.backend == "torch-compile" and single.reference_kind == "baseline"
    assert single.ratio == pytest.approx(4.0, rel=0.05)


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory):
    from jitlab_testing import run_jitlab

    store = tmp_path_factory.mktemp("glance") / "s.sqlite"
    done = run_jitlab(
        "run", str(DATA / "mixed_workload.py"), "--backends", "python,numpy", "--budget", "0.05",
        "--threads", "1", "--no-plot", "--store", str(store),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return store, done.stdout


def test_terminal_table_is_one_line_per_cell_and_details_add_tables(mixed_store, jitlab_cli):
    store, out = mixed_store
    assert not re.search(r"first \d|err \d", out)  # first call and error no longer packed into the cells
    flat = " ".join(out.split())
    assert "--details" in flat and "fastest · mixed (against python (variant=loop)): n=100 " in flat
    assert "mixed: speed-up against the baseline" in flat
    details = jitlab_cli("show", "1", "--details", "--store", str(store)).stdout
    for title in ("first call (compile + run)", "error: RMS over seeds", "peak memory of the worker"):
        assert title in details
    # where each backend computed and how it was timed (both on the CPU here: the host clock)
    assert "python, numpy: on cpu, timed with host clock" in " ".join(details.split())
    assert "timed with" not in out  # only with --details


def test_html_report_has_the_derived_tables_and_the_winner(mixed_store, tmp_path, capsys):
    store, _ = mixed_store
    assert main(["report", "1", "-o", str(tmp_path / "html"), "--store", str(store)]) == 0
    html = (tmp_path / "html" / "index.html").read_text()
    assert "mixed: speed-up against the baseline" in html and "mixed: achieved rates" in html
    assert '<p class="fastest">fastest · mixed' in html and "op/s" in html


def test_notebook_is_an_attribute_of_jitlab_and_comparisons_display(mixed_store):
    store, _ = mixed_store
    code = (
        "import sys, jitlab\n"
        "assert 'jitlab.notebook' not in sys.modules and 'pandas' not in sys.modules\n"
        f"view = jitlab.notebook.view(1, store={str(store)!r})\n"
        "assert 'fastest' in view._repr_html_()\n"
        f"cmp = jitlab.notebook.compare(1, 1, store={str(store)!r})\n"
        "html = cmp._repr_html_()\n"
        "assert 'Run 1 against run 1' in html and '<svg' in html, html[:300]\n"
        "counts = cmp.to_json()['counts']\n"
        "assert counts['slower'] == counts['faster'] == 0 and sum(counts.values()) == 8, counts\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert Store(store).run(1).status == "finished"
