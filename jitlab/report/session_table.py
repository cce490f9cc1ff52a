"""The table a pytest session ends with (as pytest-benchmark's does): one row per `jitlab_bench`
cell with its median and 95% interval (or its instruction count), its CPU time where it applies,
and, when the session is compared with a stored run, the change and the verdict."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from jitlab import formatting as fmt
from jitlab.store import CellRecord
from jitlab.store.database import params_key

if TYPE_CHECKING:
    from jitlab.compare.runs import CellComparison, RunComparison

#: printed instead of an interval wider than the value itself
UNRESOLVED = "unresolved: too noisy"


def _figure(cell: CellRecord) -> tuple[str, str]:
    """(median or count, its 95% interval as ±half-width) of a measured cell."""
    if cell.instruction_summary is not None:
        s = cell.instruction_summary
        return fmt.si(s.median, "instr"), f"±{s.ci_half_width:.2%}" if s.ci_half_width < 1 else UNRESOLVED
    s = cell.summary
    if s.count < 6:
        return fmt.seconds(s.median), "few samples"
    return fmt.seconds(s.median), f"±{s.ci_half_width:.1%}" if s.ci_half_width < 1 else UNRESOLVED


def _key(workload: str, backend: str, size: int, params: dict) -> tuple:
    return (workload, backend, size, params_key(params))


def session_table(run_id: int, cells: Sequence[CellRecord], comparison: RunComparison | None = None) -> Table:
    compared: dict[tuple, CellComparison] = {}
    if comparison is not None:
        compared = {_key(c.workload, c.backend, c.size, c.params): c for c in comparison.cells}
    title = f"jitlab_bench cells of run {run_id}"
    if comparison is not None:
        title += f" against run {comparison.run_a.run_id}"
    table = Table(title=title, title_justify="left")
    for column in ("test", "backend", "n", "median", "95% CI", "CPU time"):
        table.add_column(column, justify="left" if column in ("test", "backend") else "right")
    if comparison is not None:
        table.add_column("change", justify="right")
        table.add_column("verdict")
    for cell in cells:
        name = cell.workload + (f" ({fmt.params_label(cell.params)})" if cell.params else "")
        if cell.measured:
            figure, interval = _figure(cell)
            cpu = fmt.seconds(cell.cpu_summary.median) if cell.cpu_summary else "-"
        else:
            figure, interval, cpu = cell.status, "-", "-"
        row = [name, cell.backend, str(cell.size), figure, interval, cpu]
        if comparison is not None:
            pair = compared.get(_key(cell.workload, cell.backend, cell.size, cell.params))
            stats = pair.stats if pair is not None else None
            row.append(f"{stats.change:+.1%}" if stats is not None else "-")
            verdict = pair.verdict if pair is not None else "new"
            if stats is not None and stats.basis != "wall time" and stats.verdict != "undecided":
                verdict += f" ({stats.basis})"  # the change above is on that basis too
            row.append(verdict)
        table.add_row(*[Text(value) for value in row])
    return table


def session_table_text(
    run_id: int, cells: Sequence[CellRecord], comparison: RunComparison | None = None, width: int = 120
) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width, no_color=True, highlight=False).print(
        session_table(run_id, cells, comparison)
    )
    return buffer.getvalue().rstrip()
