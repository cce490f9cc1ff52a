"""The history figure: each series' median (with its 95% CI) against the run, steps marked."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from jitlab.history.series import History  # noqa: E402


def history_figure(history: History) -> Figure:
    fig, ax = plt.subplots(figsize=(10, 5.5), layout="constrained")
    run_ids = sorted({p.run_id for s in history.series for p in s.points})
    position = {run_id: i for i, run_id in enumerate(run_ids)}
    for series in history.series:
        x = [position[p.run_id] for p in series.points]
        y = [p.median_s for p in series.points]
        low = [p.median_s - p.ci_low_s for p in series.points]
        high = [p.ci_high_s - p.median_s for p in series.points]
        bars = ax.errorbar(x, y, yerr=[low, high], marker="o", markersize=4, capsize=2, label=series.label)
        color = bars[0].get_color()
        for step in series.steps:
            ax.axvline(position[step.run_id] - 0.5, color=color, linestyle="--", alpha=0.7)
            ax.annotate(
                f"{step.change:+.0%}",
                (position[step.run_id] - 0.5, step.after_s),
                textcoords="offset points",
                xytext=(3, 3),
                fontsize="small",
                color=color,
            )
    ax.set_xticks(range(len(run_ids)), [str(r) for r in run_ids], rotation=90 if len(run_ids) > 30 else 0)
    ax.set(
        yscale="log",
        xlabel="run",
        ylabel="median time per call (s)",
        title=f"{history.workload}: history (95% CI bars, dashed = step change)",
    )
    ax.grid(True, which="both", alpha=0.3)
    if history.series:  # below the axes: inside, it covered the latest runs' points
        fig.legend(
            loc="outside lower center", ncol=min(len(history.series), 4), fontsize="small", frameon=False
        )
    return fig


def save_history_plot(history: History, path: Path) -> Path:
    fig = history_figure(history)
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    return path
