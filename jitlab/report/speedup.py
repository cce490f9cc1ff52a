"""Speed-ups against a baseline cell, for workloads that declare one, and the derived tables and
plots printed after a run's main table.

A workload declares its baseline by setting `workload.baseline = fn`, where
`fn(backend, params) -> (baseline_backend, baseline_params)` names the cell each cell is compared
with at the same size (e.g. the sampler compares every variant with naive eager torch). The report
reads only stored records; the workload object is only asked for that mapping.

A speed-up is a ratio between two cells of one run, so it comes from the same rounds as the
"fastest" lines (`jitlab.report.round_ratios`): the geometric mean of baseline / cell per round with
a 95% interval, which takes out the machine's drift between rounds that a ratio of the cells'
medians carries. Cells without two rounds in common (older runs, one process per cell) keep the
ratio of medians, and every output says which method gave the figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from jitlab import formatting as fmt
from jitlab.errors import UserError
from jitlab.report.round_ratios import RoundRatio, round_ratio
from jitlab.store import CellRecord, RunRecord
from jitlab.store.database import params_key
from jitlab.store.identity import by_machine
from jitlab.workloads.api import Workload

BaselineFn = Callable[[str, dict[str, Any]], tuple[str, dict[str, Any]]]


#: what the speed-up tables say about how their figures were taken
CAPTION = (
    "speed-up = baseline / cell per round (geometric mean over the rounds both ran in) [95% interval]; "
    "above 1: faster than the baseline; (medians): no two rounds in common, ratio of medians, no interval"
)


@dataclass(frozen=True)
class Speedup:
    """A cell and the baseline cell it is compared with; the ratio is computed when asked, from the
    stored records (the same `round_ratio` the fastest lines use, so the two never disagree)."""

    cell: CellRecord
    baseline: CellRecord

    @cached_property
    def round_ratio(self) -> RoundRatio:
        """baseline / cell from the same rounds, or from the medians without rounds in common."""
        return round_ratio(self.baseline, self.cell)

    @property
    def ratio(self) -> float:
        """How many times faster than the baseline (> 1: faster)."""
        return self.round_ratio.ratio

    @property
    def is_baseline(self) -> bool:
        return self.cell is self.baseline

    def to_json(self) -> dict[str, Any]:
        """One row of the `derived` speed-ups in `--json`, with its interval and method."""
        found = self.round_ratio
        return {
            "backend": self.cell.backend,
            "params": dict(self.cell.params),
            "size": self.cell.size,
            "median_s": self.cell.summary.median,
            "baseline": {
                "backend": self.baseline.backend,
                "params": dict(self.baseline.params),
                "median_s": self.baseline.summary.median,
            },
            "speedup": found.ratio,
            "speedup_ci95": None if found.ci_low is None else [found.ci_low, found.ci_high],
            "speedup_method": found.method,
            "rounds": found.rounds,
            "is_baseline": self.is_baseline,
        }


def speedup_text(ratio: float, ci95: Sequence[float] | None, method: str) -> str:
    """A speed-up as the tables print it, in the style of the fastest lines: '4.00× [3.91, 4.09]',
    or '4.00× (medians)' when no rounds were in common (no interval); an interval wider than the
    speed-up itself is a word ('4.00× (unresolved)')."""
    if ci95 and not ci95[1] - ci95[0] < ratio:
        interval = " (unresolved)"
    else:
        interval = f" [{ci95[0]:.2f}, {ci95[1]:.2f}]" if ci95 else ""
    return f"{ratio:.2f}×{interval}" + (" (medians)" if method == "medians" else "")


def find_workload(run: RunRecord, name: str) -> Workload | None:
    """The workload object a run measured, to read its declared baseline or throughput; None when its
    file is gone (the tables that need it are then left out, the run's own table is not)."""
    from jitlab.workloads.registry import builtin_workloads, load_file, looks_like_file

    try:
        candidates = load_file(run.target) if looks_like_file(run.target) else []
    except UserError:
        return None
    candidates += [w for n, w in builtin_workloads().items() if n == name]
    return next((w for w in candidates if w.name == name), None)


def row_label(cell: CellRecord) -> str:
    params = fmt.params_label(cell.params)
    return f"{cell.backend} ({params})" if params else cell.backend


def speedups(cells: Sequence[CellRecord], baseline: BaselineFn) -> list[Speedup]:
    """Every ok cell paired with its ok baseline cell at the same size (cells without one are left out)."""
    ok = [c for c in cells if c.ok and c.samples_s]
    index = {(c.workload, c.backend, c.size, params_key(c.params)): c for c in ok}
    found = []
    for cell in ok:
        base_backend, base_params = baseline(cell.backend, dict(cell.params))
        base = index.get((cell.workload, base_backend, cell.size, params_key(base_params)))
        if base is not None:
            found.append(Speedup(cell, base))
    return found


def speedup_table(run: RunRecord, workload: str, found: Sequence[Speedup]) -> Table:
    sizes = sorted({s.cell.size for s in found})
    table = Table(
        title=f"run {run.run_id} · {workload}: speed-up against the baseline",
        title_justify="left",
    )
    table.add_column("cell", style="bold")
    for size in sizes:
        table.add_column(f"n={fmt.size_label(size)}", justify="right")
    rows: dict[str, dict[int, Speedup]] = {}
    for s in found:
        rows.setdefault(row_label(s.cell), {})[s.cell.size] = s
    for label, by_size in rows.items():
        row = [Text(label)]
        for size in sizes:
            s = by_size.get(size)
            if s is None:
                row.append(Text("-", style="dim"))
            elif s.is_baseline:
                row.append(Text(f"baseline {fmt.seconds(s.cell.summary.median)}", style="dim"))
            else:
                style = "green" if s.ratio >= 1.1 else ("red" if s.ratio <= 0.9 else "")
                found = s.round_ratio
                interval = None if found.ci_low is None else (found.ci_low, found.ci_high)
                row.append(Text(speedup_text(found.ratio, interval, found.method), style=style))
        table.add_row(*row)
    return table


def speedup_figure(run: RunRecord, workload: str, found: Sequence[Speedup]):
    from jitlab.report.plot import plt

    fig, ax = plt.subplots(figsize=(8, 4.8), constrained_layout=True)
    lines: dict[str, list[Speedup]] = {}
    for s in found:
        if not s.is_baseline:
            lines.setdefault(row_label(s.cell), []).append(s)
    for label, series in lines.items():
        series.sort(key=lambda s: s.cell.size)
        # the 95% interval of each per-round speed-up as an error bar (none for a ratio of medians)
        below = [s.ratio - (s.round_ratio.ci_low or s.ratio) for s in series]
        above = [(s.round_ratio.ci_high or s.ratio) - s.ratio for s in series]
        ax.errorbar(
            [s.cell.size for s in series],
            [s.ratio for s in series],
            yerr=[below, above],
            marker="o",
            capsize=3,
            label=label,
        )
    ax.axhline(1.0, color="k", linestyle="--", linewidth=1, label="baseline")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="n",
        ylabel="speed-up (baseline / cell per round, 95% CI)",
        title=f"{workload}: speed-up against the baseline",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.suptitle(f"jitlab run {run.run_id} · {run.machine.get('cpu', '')}", fontsize="small")
    return fig


def _by_workload(cells: Sequence[CellRecord]) -> dict[tuple[str, str], list[CellRecord]]:
    """Cells by (workload, machine): a speed-up or a rate never pairs cells of two machines. The
    machine is "" when one machine measured them all."""
    groups: dict[tuple[str, str], list[CellRecord]] = {}
    for machine, on_machine in by_machine(cells).items():
        for cell in on_machine:
            groups.setdefault((cell.workload, machine), []).append(cell)
    return groups


def _shown_name(name: str, machine: str) -> str:
    return f"{name} · on {machine}" if machine else name


def print_derived(console: Console, run: RunRecord, cells: Sequence[CellRecord]) -> None:
    """Speed-up and throughput tables for the workloads that declare a baseline or a throughput."""
    from jitlab.report.throughput import flat_region_text, throughput_table

    for (name, machine), group in _by_workload(cells).items():
        workload = find_workload(run, name)
        if workload is None:
            continue
        baseline = getattr(workload, "baseline", None)
        if baseline is not None:
            found = speedups(group, baseline)
            if found:
                console.print(speedup_table(run, _shown_name(name, machine), found))
                console.print(Text(CAPTION, style="dim"))
        counts = getattr(workload, "throughput", None)
        if counts is not None:
            table = throughput_table(run, _shown_name(name, machine), group, counts)
            if table is not None:
                console.print(table)
        plot_x = getattr(workload, "plot_x", None)
        line = flat_region_text(group, plot_x) if plot_x else None
        if line:
            console.print(Text(line + (f" (on {machine})" if machine else "")))


def save_derived_plots(run: RunRecord, cells: Sequence[CellRecord], folder: Path | None = None) -> list[Path]:
    """Speed-up plots (workloads with a baseline) and time-against-parameter plots (`plot_x`)."""
    from jitlab.report.plot import _safe, plt
    from jitlab.report.throughput import parameter_figure

    folder = folder or run.plots_folder
    paths = []
    for (name, machine), group in _by_workload(cells).items():
        workload = find_workload(run, name)
        if workload is None:
            continue
        figures = []
        baseline = getattr(workload, "baseline", None)
        found = speedups(group, baseline) if baseline is not None else []
        shown = _shown_name(name, machine)
        if any(not s.is_baseline for s in found):
            figures.append(("speedup", speedup_figure(run, shown, found)))
        plot_x = getattr(workload, "plot_x", None)
        if plot_x and any(c.ok and plot_x in c.params for c in group):
            figures.append((plot_x, parameter_figure(run, shown, group, plot_x)))
        on = f"-{_safe(machine)}" if machine else ""
        for suffix, fig in figures:
            path = folder / f"run-{run.run_id}-{_safe(name)}{on}-{_safe(suffix)}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, dpi=110)
            plt.close(fig)
            paths.append(path)
    return paths
