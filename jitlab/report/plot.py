"""The run's figure: time against n and error against n, one line per backend, log axes.

The time panel shades each backend's IQR. The error panel does not shade: with nine backends whose
errors all lie near the sampling-theory line, nine min–max bands over seeds covered each other and
the lines. Each backend's spread over seeds is a vertical bar instead, its points set slightly apart
along n (the "dodge" of grouped bar charts) so that bars at one n stay apart. The legend sits below
both panels, where it covers no data.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from jitlab.formatting import params_label  # noqa: E402
from jitlab.store import CellRecord, RunRecord  # noqa: E402
from jitlab.store.identity import machine_naming  # noqa: E402


def run_figure(run: RunRecord, cells: Sequence[CellRecord], workload: str) -> Figure:
    ok = [c for c in cells if c.ok and c.samples_s and c.workload == workload]
    fig, (ax_time, ax_error) = plt.subplots(1, 2, figsize=(12, 5.2), layout="constrained")
    # one line per backend and swept-parameter combination (e.g. fusion's k), never k values joined,
    # and per machine when several measured the run
    machine = machine_naming(ok)

    def line_of(c: CellRecord) -> tuple[str, str]:
        params = params_label(c.params) + (f" on {machine(c)}" if machine(c) else "")
        return (c.backend, params.strip())

    lines = list(dict.fromkeys(line_of(c) for c in ok))
    for index, (backend, params) in enumerate(lines):
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
            shifted = en * dodge(index, len(lines))
            ax_error.errorbar(
                shifted,
                e,
                yerr=[np.maximum(e - lo, 0), np.maximum(hi - e, 0)],
                marker="o",
                markersize=4,
                capsize=2,
                linewidth=1,
                color=line.get_color(),
            )
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
        title=f"{workload}: error (RMS over seeds; bars: min–max)",
    )
    if not any_error and any(c.errors for c in ok):
        ax_error.text(0.5, 0.65, "every seed's error is 0", transform=ax_error.transAxes, ha="center")
    for ax in (ax_time, ax_error):
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax_time.get_legend_handles_labels()
    extra = [(h, lab) for h, lab in zip(*ax_error.get_legend_handles_labels()) if lab not in labels]
    if handles or extra:
        fig.legend(
            [*handles, *(h for h, _ in extra)],
            [*labels, *(lab for _, lab in extra)],
            loc="outside lower center",
            ncol=min(len(handles) + len(extra), 6),
            fontsize="small",
            frameon=False,
        )
    fig.suptitle(f"jitlab run {run.run_id} · {run.machine.get('cpu', '')}", fontsize="small")
    return fig


def dodge(index: int, count: int, spread: float = 0.2) -> float:
    """The factor that sets line `index` of `count` apart along a log axis: 1 for a single line,
    from 1 - spread/2 to 1 + spread/2 across several, so that error bars at one n do not overlap."""
    if count <= 1:
        return 1.0
    return float(np.exp(np.log1p(spread) * (index / (count - 1) - 0.5)))


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
