"""The figures read as a new user needs: legends beside the data, not over it; no stack of shaded
bands in the error panel; a title that fits its figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import PolyCollection

from jitlab.report.html.figures import canary_figure, workload_figure
from jitlab.report.plot import dodge, run_figure
from jitlab.store import CellRecord, RunRecord

BACKENDS = (
    "python",
    "numpy",
    "numba",
    "numba-parallel",
    "jax",
    "tensorflow",
    "torch",
    "torch-compile",
    "triton",
)


def cells() -> list[CellRecord]:
    rng = np.random.default_rng(0)
    out = []
    for k, backend in enumerate(BACKENDS):
        for n in (10**4, 10**5, 10**6):
            sigma = np.sqrt(np.pi * (4 - np.pi) / n)
            errors = tuple(abs(rng.normal(0, sigma, 5)))
            samples = tuple(1e-8 * n * (k + 1) * rng.lognormal(0, 0.05, 20))
            out.append(
                CellRecord(
                    1,
                    "pi",
                    backend,
                    n,
                    {},
                    "ok",
                    None,
                    samples_s=samples,
                    errors=errors,
                    expected_error=sigma,
                )
            )
    return out


def run() -> RunRecord:
    return RunRecord(1, "2026-01-01", None, "finished", "pi", ("pi",), (), None, {}, {"cpu": "c"})


def inside(figure, artist) -> bool:
    figure.canvas.draw()
    box = artist.get_window_extent(figure.canvas.get_renderer())
    width, height = figure.canvas.get_width_height()
    return box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height


def overlaps(figure, legend, ax) -> bool:
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    return legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))


def test_the_run_figure_keeps_its_legend_off_the_data_and_shades_no_error_bands():
    figure = run_figure(run(), cells(), "pi")
    ax_time, ax_error = figure.axes
    assert ax_time.get_legend() is None and ax_error.get_legend() is None
    (legend,) = figure.legends
    assert len(legend.get_texts()) == len(BACKENDS) + 1  # the backends and sampling theory's σ
    assert not overlaps(figure, legend, ax_time) and not overlaps(figure, legend, ax_error)
    assert not [c for c in ax_error.collections if isinstance(c, PolyCollection)]  # no shaded bands
    assert [c for c in ax_time.collections if isinstance(c, PolyCollection)]  # the IQR stays shaded
    plt.close(figure)


def test_the_report_figure_has_one_legend_below_its_panels():
    figure = workload_figure("pi", cells())
    assert all(ax.get_legend() is None for ax in figure.axes)
    (legend,) = figure.legends
    assert not any(overlaps(figure, legend, ax) for ax in figure.axes)
    plt.close(figure)


def test_the_canary_title_fits_its_figure_with_room_to_spare():
    readings = [{"t": 60.0 * i, "python_s": 0.02 + 0.001 * i, "numpy_s": 0.01} for i in range(5)]
    figure = canary_figure({"": readings})
    title = figure.axes[0].title
    assert inside(figure, title)
    # the one-line title took 94% of the figure's width and was cut where fonts ran wider
    width = title.get_window_extent(figure.canvas.get_renderer()).width
    assert width < 0.7 * figure.canvas.get_width_height()[0]
    plt.close(figure)


def test_dodge_sets_lines_apart_symmetrically():
    assert dodge(0, 1) == 1.0
    factors = [dodge(i, 9) for i in range(9)]
    assert factors == sorted(factors) and factors[4] == 1.0
    assert abs(factors[0] * factors[-1] - 1) < 1e-12
