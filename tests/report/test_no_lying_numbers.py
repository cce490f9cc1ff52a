"""No printed number that lies: an interval wider than its value and a noise floor beyond 100% are
words, a ratio whose interval is wider than itself says so, and the pytest session's table shows
each cell's figure and verdict."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console

from jitlab.compare.runs import compare_cells
from jitlab.compare.table import UNRESOLVED, print_comparison
from jitlab.report.fastest import ratio_text
from jitlab.report.round_ratios import RoundRatio
from jitlab.report.session_table import session_table_text
from jitlab.report.table import noise_text
from jitlab.store import CellRecord, RunRecord


def run(run_id: int) -> RunRecord:
    return RunRecord(run_id, "now", None, "finished", "w", ("w",), (), None, {}, {})


def cell(run_id, samples, process, backend="python", **extra):
    return CellRecord(run_id, "w", backend, 10, {}, "ok", None, samples_s=tuple(samples),
                      sample_process=tuple(process), **extra)  # fmt: skip


def test_a_wild_comparison_prints_words_not_numbers():
    rng = np.random.default_rng(0)
    process = [0] * 10 + [1] * 10 + [2] * 10
    a = cell(1, 1e-3 * rng.lognormal(0, 0.01, 30), process)
    # processes of B a factor of 40 apart: the interval of the ratio spans orders of magnitude
    spread = [1e-4, 1.2e-4, 4e-3]
    b = cell(2, np.concatenate([m * rng.lognormal(0, 0.01, 10) for m in spread]), process)
    comparison = compare_cells(run(1), run(2), [a], [b])
    stats = comparison.cells[0].stats
    assert stats.unresolved and stats.margin >= 1.0
    buffer = io.StringIO()
    print_comparison(Console(file=buffer, width=200, no_color=True), comparison)
    text = buffer.getvalue()
    assert UNRESOLVED in text and "unresolved" in text
    assert "%]" not in text.split("\n")[3]  # the cell's row holds no interval


def test_a_noise_floor_beyond_100_percent_is_a_word():
    wild = cell(1, [1e-3] * 10 + [1.1e-3] * 10 + [5e-3] * 10, [0] * 10 + [1] * 10 + [2] * 10)
    assert wild.noise_floor > 1.0
    assert noise_text(wild).plain.startswith("unresolved")
    calm = cell(1, [1e-3] * 10 + [1.01e-3] * 10, [0] * 10 + [1] * 10)
    assert noise_text(calm).plain.startswith("±0.5%")


def test_a_ratio_whose_interval_is_wider_than_itself_says_so():
    assert ratio_text(RoundRatio(4.07, 3.9, 4.25, 3, "per-round")) == "4.07× [3.90, 4.25]"
    wide = ratio_text(RoundRatio(4.52, 0.0, 5.3e16, 3, "per-round"))
    assert wide.startswith("4.52× (") and "too noisy" in wide and "[" not in wide


def test_the_pytest_session_table_shows_figures_and_verdicts():
    rng = np.random.default_rng(1)
    process = [0] * 30
    before = cell(1, 1e-3 * rng.lognormal(0, 0.002, 30), process, cpu_samples_s=tuple([0.9e-3] * 30))
    after = cell(2, 1.3e-3 * rng.lognormal(0, 0.002, 30), process, cpu_samples_s=tuple([1.2e-3] * 30))
    counted = CellRecord(2, "w", "numpy", 10, {}, "ok", None, instructions=(8.7e6,) * 5,
                         instruction_process=(0,) * 5)  # fmt: skip
    failed = CellRecord(2, "v", "python", 10, {}, "failed", "ValueError: no")
    comparison = compare_cells(run(1), run(2), [before], [after])
    text = session_table_text(2, [after, counted, failed], comparison)
    lines = text.splitlines()
    assert "jitlab_bench cells of run 2 against run 1" in lines[0]
    row = next(line for line in lines if "│ w " in line and "python" in line)
    assert "1.3 ms" in row and "+30." in row and "slower" in row and "900 µs" not in row and "1.2 ms" in row
    assert any("8.7 Minstr" in line and "new" in line for line in lines)
    assert any("failed" in line for line in lines)
    plain = session_table_text(2, [after])
    assert "verdict" not in plain and "±" in plain
