"""The run's figure: time against n and error against n, one line per backend, log axes, spread shaded."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from jitlab.report.formatting import params_label  # noqa: E402
from jitlab.store import CellRecord, RunRecord  # noqa: E402
from jitlab.store.identity import machine_label, machine_labels  # noqa: E402


def run_figure(run: RunRecord, cells: Sequence[CellRecord], workload: str) -> Figure:
    ok = [c for c in cells if c.ok and c.samples_s and c.workload == workload]
    fig, (ax_time, ax_error) = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)
    # one line per backend and swept-parameter combination (e.g. fusion's k), never k values joined,
    # and per machine when several measured the run
    several = len(machine_labels(c.machine for c in ok)) > 1

    def line_of(c: CellRecord) -> tuple[str, str]:
        params = params_label(c.params) + (f" on {machine_label(c.machine)}" if several else "")
        return (c.backend, params.strip())

    lines = list(dict.fromkeys(line_of(c) for c in ok))
    for backend, params in lines:
        label = f"{backend} {params}" if params else backend
        series = sorted((c for c in ok if line_of(c) == (backend, params)), key=lambda c: c.size)
        n = np.array([c.size for c in series], dtype=float)
        median = np.array([c.summary.median for c in series])
        q1 = np.array([np.percentile(c.samples_s, 25) for c in series])
        q3 = np.array([np.percentile(c.samples_s, 75) for c in series])
        (line,) = ax_time.plot(n, median, marker="o", label=label)
        ax_time.fill_between(n, q1, q3, color=line.get_color(), alpha=0.25, linewidth=0)
        errs = [(c.size, c.error, min(c.errors), max(c.errors)) for c in series if c.errors]
        if errs:
            en, e, lo, hi = (np.array(v, dtype=float) for v in zip(*errs))
            ax_error.plot(en, e, marker="o", color=line.get_color(), label=label)
            ax_error.fill_between(en, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
    expected = sorted({(c.size, c.expected_error) for c in ok if c.expected_error})
    if expected:
        en, ee = zip(*expected)
        ax_error.plot(en, ee, "k--", label="sampling theory σ")
    ax_time.set(
        xscale="log",
        yscale="log",
        xlabel="n",
        ylabel="steady-state time per call (s)",
        title=f"{workload}: time (median, IQR shaded)",
    )
    any_error = any(e for c in ok for e in c.errors)
    ax_error.set(
        xscale="log",
        yscale="log" if any_error else "linear",
        xlabel="n",
        ylabel="RMS error over seeds",
        title=f"{workload}: error (min–max over seeds shaded)",
    )
    if not any_error and any(c.errors for c in ok):
        ax_error.text(0.5, 0.65, "every seed's error is 0", transform=ax_error.transAxes, ha="center")
    for ax in (ax_time, ax_error):
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small" if len(lines) <= 12 else "xx-small", ncol=1 if len(lines) <= 12 else 2)
    fig.suptitle(f"jitlab run {run.run_id} · {run.machine.get('cpu', '')}", fontsize="small")
    return fig


def save_run_plots(run: RunRecord, cells: Sequence[CellRecord], out: Path | None = None) -> list[Path]:
    """One PNG per workload, by default beside the store: run-<id>-<workload>.png."""
    paths = []
    workloads = list(dict.fromkeys(c.workload for c in cells))
    for workload in workloads:
        if out is not None and len(workloads) == 1:
            path = out
        else:
            folder = out.parent if out is not None else run.plots_folder
            path = folder / f"run-{run.run_id}-{_safe(workload)}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig = run_figure(run, cells, workload)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)
