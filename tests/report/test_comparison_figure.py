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


def test_one_wild_interval_does_not_stretch_the_axis():
    from jitlab.report.html.figures import axis_bound

    # changes within ±8%, intervals within ±12%, one interval reaching +3,424%
    points = [3.0, -8.0, 1.0, 5.0]
    ends = [-2.0, 6.0, -12.0, -4.0, -1.0, 3.0, 1.0, 3424.0]
    bound = axis_bound(points, ends)
    assert 20.0 <= bound <= 40.0  # the points and ordinary intervals fit, the wild one is clipped
    assert axis_bound([0.5], [0.2, 0.9]) == 5.0  # never narrower than ±5%


def test_a_clipped_interval_is_labelled_with_its_end():
    import matplotlib.pyplot as plt

    from jitlab.report.html.figures import comparison_figure

    def at(run_id: int, size: int, samples: tuple[float, ...]) -> CellRecord:
        return CellRecord(run_id, "pi", "numpy", size, {}, "ok", None, samples_s=samples)

    steady = tuple(1.0 + 0.01 * k for k in range(20))
    a = [at(1, 10**k, steady) for k in range(2, 7)]
    b = [at(2, 10**k, tuple(x * 1.02 for x in steady)) for k in range(2, 6)]
    b.append(at(2, 10**6, tuple([1.0] * 12 + [40.0] * 8)))  # the median stays, the interval explodes
    comparison = compare_cells(run(1), run(2), a, b)
    highs = [100 * (c.stats.ci_high - 1) for c in comparison.cells]
    figure = comparison_figure(comparison)
    ax = figure.axes[0]
    assert max(highs) > 1000 and ax.get_xlim()[1] < 100  # clipped, not stretched
    assert any(t.get_text() == f"{max(highs):+,.0f}%" for t in ax.texts)  # its real end is written
    plt.close(figure)
