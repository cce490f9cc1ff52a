"""Achieved rates (GB/s, GFLOP/s, operations per second) for workloads that declare their work.

A workload declares `workload.throughput = fn(size, params, backend) -> {"bytes": b, "flops": f,
"ops": o}` (any subset) giving the work of one call; the rate is that work divided by the cell's
median time. When the machine peaks are cached (`jitlab machine`), bandwidth and FLOP/s are also
shown as a share of the peak; they are never measured from here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.table import Table

from jitlab import formatting as fmt
from jitlab.backends.registry import backend_rank
from jitlab.store import CellRecord, RunRecord

CountsFn = Callable[[int, dict[str, Any], str], dict[str, float]]


def rates(cell: CellRecord, counts: CountsFn) -> dict[str, float]:
    """Work per second of an ok cell: keys `bytes_per_s`, `flops_per_s`, `ops_per_s` (those declared)."""
    median = cell.summary.median
    work = counts(cell.size, dict(cell.params), cell.backend)
    return {f"{kind}_per_s": amount / median for kind, amount in work.items()}


def _peaks():
    from jitlab.machine.peaks import cached_peaks

    return cached_peaks()


def _order(cell: CellRecord) -> tuple:
    """Backend (in the registry's order), size, then parameters with numbers in numeric order (k = 2 before k = 16)."""
    params = [
        (name, (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value)))
        for name, value in sorted(cell.params.items())
    ]
    return (backend_rank(cell.backend), cell.size, params)


RATE_COLUMNS = (
    ("bytes_per_s", "GB/s", lambda v: f"{v / 1e9:.3g}"),
    ("flops_per_s", "GFLOP/s", lambda v: f"{v / 1e9:.3g}"),
    ("ops_per_s", "op/s", fmt.si),
)


def throughput_table(
    run: RunRecord, workload: str, cells: Sequence[CellRecord], counts: CountsFn
) -> Table | None:
    """One row per cell (backend, size, parameters): median time and each declared rate."""
    ok = [c for c in cells if c.ok and c.samples_s]
    if not ok:
        return None
    peaks = _peaks()
    declared = {key for c in ok for key in rates(c, counts)}
    columns = [column for column in RATE_COLUMNS if column[0] in declared]
    caption = "rate = work of one call / median time"
    if peaks is not None and "bytes_per_s" in declared:
        caption += f"; % of peak = share of this machine's {peaks.bandwidth_bytes_per_s / 1e9:.3g} GB/s"
    table = Table(
        title=f"run {run.run_id} · {workload}: achieved rates", title_justify="left", caption=caption
    )
    with_params = any(c.params for c in ok)
    for name in ("backend", "n", "params", "median"):
        if name != "params" or with_params:
            table.add_column(name, style="bold" if name == "backend" else "", justify="left")
    for _, title, _ in columns:
        table.add_column(title, justify="right")
    if peaks is not None and "bytes_per_s" in declared:
        table.add_column("% of peak", justify="right", style="cyan")
    for cell in sorted(ok, key=_order):
        values = rates(cell, counts)
        row = [cell.backend, fmt.size_label(cell.size)]
        row += [fmt.params_label(cell.params)] if with_params else []
        row += [fmt.seconds(cell.summary.median)]
        row += [render(values[key]) if key in values else "-" for key, _, render in columns]
        if peaks is not None and "bytes_per_s" in declared:
            row.append(f"{values['bytes_per_s'] / peaks.bandwidth_bytes_per_s:.0%}")
        table.add_row(*row)
    return table


def parameter_figure(run: RunRecord, workload: str, cells: Sequence[CellRecord], x: str):
    """Time against the swept parameter `x` (log-log), one line per backend and size."""
    from jitlab.report.plot import plt

    fig, ax = plt.subplots(figsize=(8, 4.8), constrained_layout=True)
    lines: dict[str, list[CellRecord]] = {}
    for cell in cells:
        if cell.ok and cell.samples_s and x in cell.params:
            others = ", ".join(f"{k}={v}" for k, v in sorted(cell.params.items()) if k != x)
            label = f"{cell.backend} n={fmt.size_label(cell.size)}" + (f" {others}" if others else "")
            lines.setdefault(label, []).append(cell)
    for label, series in lines.items():
        series.sort(key=lambda c: float(c.params[x]))
        ax.plot(
            [float(c.params[x]) for c in series],
            [c.summary.median for c in series],
            marker="o",
            label=label,
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel=x,
        ylabel="steady-state time per call (s)",
        title=f"{workload}: time against {x}",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="x-small", ncol=2)
    fig.suptitle(f"jitlab run {run.run_id} · {run.machine.get('cpu', '')}", fontsize="small")
    return fig


#: a time within this share of the time at the smallest parameter value counts as "the same"
FLAT_TOLERANCE = 0.25


def flat_up_to(cells: Sequence[CellRecord], x: str, tolerance: float = FLAT_TOLERANCE) -> dict[str, Any]:
    """For each backend and size: the largest value of `x` up to which the median stays within
    `tolerance` of the median at the smallest `x` (every value in between too)."""
    lines: dict[str, list[CellRecord]] = {}
    for cell in cells:
        if cell.ok and cell.samples_s and x in cell.params:
            lines.setdefault(f"{cell.backend} n={fmt.size_label(cell.size)}", []).append(cell)
    flat: dict[str, Any] = {}
    for label, series in lines.items():
        series.sort(key=lambda c: float(c.params[x]))
        first = series[0].summary.median
        last = series[0].params[x]
        for cell in series[1:]:
            if cell.summary.median > first * (1 + tolerance):
                break
            last = cell.params[x]
        flat[label] = last
    return flat


def flat_region_text(cells: Sequence[CellRecord], x: str) -> str | None:
    flat = flat_up_to(cells, x)
    if not flat:
        return None
    parts = ", ".join(f"{label}: {x} ≤ {value}" for label, value in flat.items())
    return f"time within {FLAT_TOLERANCE:.0%} of the smallest {x}: {parts}"
