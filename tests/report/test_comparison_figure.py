"""The comparison figure of the HTML report draws every compared cell, even when the bootstrap
interval of a ratio equals the ratio itself (one sample a side) up to rounding."""

from __future__ import annotations

from jitlab.compare.runs import compare_cells
from jitlab.report.html.figures import comparison_figure, svg_markup
from jitlab.store import CellRecord, RunRecord


def run(run_id: int) -> RunRecord:
    return RunRecord(run_id, "2026-01-01", None, "finished", "pi", ("pi",), (), None, {}, {"cpu": "c"})


def cell(run_id: int, samples: tuple[float, ...]) -> CellRecord:
    return CellRecord(run_id, "pi", "numpy", 1000, {}, "ok", None, samples_s=samples)


def test_single_sample_cells_draw():
    # exp(log(b / a)) differs from b / a in the last bit for these two values
    comparison = compare_cells(
        run(1), run(2), [cell(1, (1.800523570190444,))], [cell(2, (1.7168487029857216,))]
    )
    (compared,) = comparison.cells
    assert compared.stats.ci_low > compared.stats.ratio or compared.stats.ci_high < compared.stats.ratio
    assert "<svg" in svg_markup(comparison_figure(comparison))
