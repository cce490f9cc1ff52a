"""Figures for the HTML report, rendered by matplotlib as inline SVG.

The SVG is stripped of its XML prolog, DOCTYPE, metadata and comments (matplotlib writes each text
as a comment; it escapes them, but nothing of the user's needs to be there), and text is drawn as
paths, so a workload or backend name ends up as glyph outlines, never as markup.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from markupsafe import Markup  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from jitlab.compare.runs import RunComparison  # noqa: E402
from jitlab.formatting import params_label  # noqa: E402
from jitlab.store import CellRecord  # noqa: E402

_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>", re.S)


def svg_markup(fig: Figure) -> Markup:
    """The figure as an <svg> element safe to place in HTML as is; closes the figure."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "jitlab"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = _METADATA.sub("", _COMMENT.sub("", _PROLOG.sub("", buffer.getvalue(), count=1)))
    if "<script" in svg.lower() or "<foreignobject" in svg.lower():
        raise ValueError("refusing to inline an SVG with active content")
    return Markup(svg.strip())


def _series(cells: Sequence[CellRecord]) -> dict[str, list[CellRecord]]:
    groups: dict[str, list[CellRecord]] = {}
    for cell in cells:
        label = cell.backend + (f" ({params_label(cell.params)})" if cell.params else "")
        groups.setdefault(label, []).append(cell)
    return {label: sorted(group, key=lambda c: c.size) for label, group in groups.items()}


def workload_figure(workload: str, cells: Sequence[CellRecord]) -> Figure:
    """Four panels against n per backend: steady-state time (IQR shaded), error, first call, memory."""
    ok = [c for c in cells if c.ok and c.samples_s]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), layout="constrained")
    ax_time, ax_error, ax_first, ax_memory = axes.ravel()
    for label, series in _series(ok).items():
        n = np.array([c.size for c in series], dtype=float)
        median = np.array([c.summary.median for c in series])
        q1 = np.array([np.percentile(c.samples_s, 25) for c in series])
        q3 = np.array([np.percentile(c.samples_s, 75) for c in series])
        (line,) = ax_time.plot(n, median, marker="o", label=label)
        color = line.get_color()
        ax_time.fill_between(n, q1, q3, color=color, alpha=0.25, linewidth=0)
        errors = [(c.size, c.error) for c in series if c.error is not None and c.error > 0]
        if errors:
            ax_error.plot(*zip(*errors), marker="o", color=color, label=label)
        first = [(c.size, c.first_call_s) for c in series if c.first_call_s]
        if first:
            ax_first.plot(*zip(*first), marker="o", color=color, label=label)
        rss = [(c.size, c.peak_rss_bytes / 2**20) for c in series if c.peak_rss_bytes]
        if rss:
            ax_memory.plot(*zip(*rss), marker="o", color=color, label=f"{label} RSS")
        device = [(c.size, c.peak_device_bytes / 2**20) for c in series if c.peak_device_bytes]
        if device:
            ax_memory.plot(*zip(*device), marker="s", linestyle="--", color=color, label=f"{label} device")
    expected = sorted({(c.size, c.expected_error) for c in ok if c.expected_error})
    if expected:
        ax_error.plot(*zip(*expected), "k--", label="sampling theory σ")
    ax_time.set(yscale="log", ylabel="steady-state time per call (s)", title="time (median, IQR shaded)")
    ax_error.set(yscale="log", ylabel="RMS error over seeds", title="error")
    ax_first.set(yscale="log", ylabel="first call (s)", title="first call (compile + run)")
    ax_memory.set(ylabel="peak memory (MiB)", title="peak memory of the worker")
    legend: dict[str, Any] = {}
    for ax in axes.ravel():
        ax.set(xscale="log", xlabel="n")
        ax.grid(True, which="both", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if not handles:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", color="gray")
        for handle, label in zip(handles, labels):
            legend.setdefault(label, handle)
    if legend:  # one legend for the four panels, below them: inside a panel it covered the data
        fig.legend(
            list(legend.values()),
            list(legend),
            loc="outside lower center",
            ncol=min(len(legend), 5),
            fontsize="small",
            frameon=False,
        )
    fig.suptitle(workload, fontsize="medium")
    return fig


def axis_bound(points: Sequence[float], ends: Sequence[float], floor: float = 5.0) -> float:
    """How far from 0 the change axis reaches (in %): enough for every point and for the intervals
    of ordinary width, but not for one interval of +3,424% (a cell with a few wild samples), which
    would squeeze every other cell into a sliver. Intervals beyond are clipped and labelled."""
    largest_point = max((abs(x) for x in points), default=0.0)
    typical_end = float(np.percentile([abs(x) for x in ends], 75)) if ends else 0.0
    return max(floor, 2.5 * largest_point, typical_end)


def comparison_figure(comparison: RunComparison) -> Figure | None:
    """Change of the median per compared cell with its 95% CI; significant changes coloured; an
    interval far wider than the rest is clipped at the axis' edge, with its end written there."""
    rows = [c for c in comparison.cells if c.stats is not None]
    if not rows:
        return None
    height = min(2.0 + 0.28 * len(rows), 30.0)
    fig, ax = plt.subplots(figsize=(10, height), layout="constrained")
    y = np.arange(len(rows))[::-1]
    points = [100 * (c.stats.ratio - 1) for c in rows if c.stats is not None]
    # the interval comes from exp(log) of bootstrap replicates: with one sample per side it equals
    # the ratio up to rounding, which must not become a negative error bar
    lows = [min(100 * (c.stats.ci_low - 1), x) for c, x in zip(rows, points) if c.stats is not None]
    highs = [max(100 * (c.stats.ci_high - 1), x) for c, x in zip(rows, points) if c.stats is not None]
    bound = axis_bound(points, lows + highs)
    for yi, cell, x, low, high in zip(y, rows, points, lows, highs):
        assert cell.stats is not None
        color = {"slower": "tab:red", "faster": "tab:green"}.get(cell.stats.verdict, "gray")
        shown_low, shown_high = max(low, -bound), min(high, bound)
        ax.errorbar([x], [yi], xerr=[[x - shown_low], [shown_high - x]], fmt="o", color=color, capsize=3)
        for end, shown, side in ((low, shown_low, "right"), (high, shown_high, "left")):
            if end != shown:  # clipped: an arrow head at the edge and the interval's real end
                ax.plot([shown], [yi], marker=">" if side == "left" else "<", color=color)
                ax.annotate(
                    f"{end:+,.0f}%",
                    (shown, yi),
                    xytext=(-6 if side == "left" else 6, 4),
                    textcoords="offset points",
                    ha=side,
                    fontsize="x-small",
                    color=color,
                )
    labels = [
        f"{c.workload} · {c.backend} · n={c.size}" + (f" ({params_label(c.params)})" if c.params else "")
        for c in rows
    ]
    ax.set_yticks(y, labels, fontsize="small")
    ax.axvline(0, color="black", linewidth=0.8)
    left, right = max(min(lows), -bound), min(max(highs), bound)
    pad = 0.08 * max(right - left, 1.0)
    ax.set_xlim(min(left, 0.0) - pad, max(right, 0.0) + pad)
    ax.set(
        xlabel=f"change of the median, run {comparison.run_b.run_id} against run {comparison.run_a.run_id} (%)",
        title="red: significantly slower · green: significantly faster · gray: no significant change",
    )
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def canary_figure(readings_by_machine: dict[str, Sequence[dict]]) -> Figure:
    """The drift canary over the run: each probe's time relative to its fastest reading, against
    minutes since the run's first reading, one line per probe and machine."""
    fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
    start = min(r["t"] for readings in readings_by_machine.values() for r in readings)
    for machine, readings in readings_by_machine.items():
        minutes = np.array([(r["t"] - start) / 60 for r in readings])
        for probe, label in (("python_s", "pure Python"), ("numpy_s", "NumPy (memory)")):
            times = np.array([r[probe] for r in readings])
            name = f"{label} on {machine}" if machine else label
            ax.plot(minutes, times / times.min(), marker=".", linewidth=1, label=name)
    ax.axhline(1.0, color="grey", linewidth=0.5)
    ax.set_xlabel("minutes into the run")
    ax.set_ylabel("probe time / fastest")
    # two short lines: on one line the title was wider than the figure and was cut
    ax.set_title(
        "machine speed during the run\n(drift canary, read before each worker process)", fontsize="medium"
    )
    ax.legend(fontsize="small")
    return fig
