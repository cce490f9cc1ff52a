"""The terminal table of a run: backends as rows, sizes as columns, one cell per measurement."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from jitlab.report import formatting as fmt
from jitlab.report.speedup import print_derived
from jitlab.store import CellRecord, RunRecord
from jitlab.store.identity import machine_label, machine_labels

STATUS_STYLE = {"failed": "red", "timeout": "red", "unavailable": "dim"}


def cell_text(cell: CellRecord) -> Text:
    if not cell.ok:
        text = Text(cell.status, style=STATUS_STYLE.get(cell.status, ""))
        return text
    s = cell.summary
    text = Text()
    text.append(fmt.seconds(s.median), style="bold")
    text.append(f" ±{s.ci_half_width:.1%}" if s.count >= 6 else " (few samples)")
    if cell.warnings:
        text.append(" !", style="yellow")
    text.append(f"\nfirst {fmt.seconds(cell.first_call_s)}")
    if cell.dispatch_s is not None:
        text.append(f"\ndispatch {fmt.seconds(cell.dispatch_s)}", style="cyan")
    if cell.error is not None:
        text.append(f"\nerr {fmt.sci(cell.error)}")
        if cell.expected_error:
            ratio = cell.error / cell.expected_error
            style = "red" if ratio > 3 else ""
            text.append(f" ({ratio:.1f}σ)", style=style)
    return text


def _groups(cells: Sequence[CellRecord]) -> dict[tuple[str, str, str], list[CellRecord]]:
    """Cells by (workload, parameters, machine); the machine is "" when one machine measured all."""
    several = len(machine_labels(c.machine for c in cells)) > 1
    groups: dict[tuple[str, str, str], list[CellRecord]] = {}
    for cell in cells:
        key = (cell.workload, fmt.params_label(cell.params), machine_label(cell.machine) if several else "")
        groups.setdefault(key, []).append(cell)
    return dict(sorted(groups.items(), key=lambda item: (item[0][0], item[0][2]))) if several else groups


def run_tables(run: RunRecord, cells: Sequence[CellRecord]) -> list[Table]:
    tables = []
    for (workload, params, machine), group in _groups(cells).items():
        sizes = sorted({c.size for c in group})
        backends = list(dict.fromkeys(c.backend for c in group))
        title = f"run {run.run_id} · {workload}" + (f" ({params})" if params else "")
        title += f" · on {machine}" if machine else ""
        table = Table(title=title, show_lines=True, title_justify="left")
        table.add_column("backend", style="bold")
        for size in sizes:
            table.add_column(f"n={fmt.size_label(size)}", justify="right")
        by_key = {(c.backend, c.size): c for c in group}
        for backend in backends:
            row = [Text(backend)]
            for size in sizes:
                cell = by_key.get((backend, size))
                row.append(cell_text(cell) if cell else Text("-", style="dim"))
            table.add_row(*row)
        tables.append(table)
    return tables


def notes(cells: Sequence[CellRecord]) -> list[Text]:
    """Failed and unavailable cells with their reasons, and warnings, below the tables."""
    lines: list[Text] = []
    several = len(machine_labels(c.machine for c in cells)) > 1
    reasons: dict[tuple[str, str, str], list[str]] = {}
    for cell in cells:
        if not cell.ok and cell.reason:
            where = f" on {machine_label(cell.machine)}" if several else ""
            reasons.setdefault((cell.backend + where, cell.status, cell.reason), []).append(
                fmt.size_label(cell.size)
            )
    for (backend, status, reason), sizes in reasons.items():
        lines.append(
            Text(f"{backend} {status} at n={','.join(sizes)}: {reason}", style=STATUS_STYLE.get(status, ""))
        )
    for cell in cells:
        if cell.warnings:
            where = f"{cell.backend} n={fmt.size_label(cell.size)}" + (
                f" {fmt.params_label(cell.params)}" if cell.params else ""
            )
            where += f" on {machine_label(cell.machine)}" if several else ""
            lines.append(Text(f"! {where}: " + "; ".join(cell.warnings), style="yellow"))
    return lines


LEGEND = (
    "median ±95% CI half-width of the steady state · first = first call (compile + run) · "
    "dispatch = time for the call to return (asynchronous backends) · err = RMS error over seeds, "
    "(kσ) = that error in units of the error sampling theory predicts"
)


def print_run(console: Console, run: RunRecord, cells: Sequence[CellRecord]) -> None:
    for table in run_tables(run, cells):
        console.print(table)
    print_derived(console, run, cells)  # speed-ups and rates, for workloads that declare them
    console.print(Text(LEGEND, style="dim"))
    extra = notes(cells)
    if extra:
        console.print(Group(*extra))
