"""What `jitlab run` shows while it measures: the table filling in round by round, and the time left.

In a terminal, a live view on stderr holds the run's table as it stands (every cell from its first
round on, the last rounds narrowing it; a cell still waiting for rounds is dimmed) and one status
line: the round, the processes done and planned, the time elapsed and an estimate of the time left
from what the same cells' processes took. It disappears at the end, when the final table is printed.
Elsewhere (a CI log) nothing is redrawn: one line per finished cell and one per finished round.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from jitlab import formatting as fmt
from jitlab.engine.rounds import RoundsProgress
from jitlab.engine.spec import CellSpec
from jitlab.report.table import cell_text, run_tables
from jitlab.store import CellRecord, RunRecord
from jitlab.store.database import params_key
from jitlab.store.identity import machine_label


def duration(seconds: float) -> str:
    """'45 s', '3 min 05 s'."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"


def spec_label(spec: CellSpec) -> str:
    params = f" · {fmt.params_label(spec.params)}" if spec.params else ""
    return f"{spec.workload} · {spec.backend} · n={fmt.size_label(spec.size)}{params}"


def status_line(progress: RoundsProgress | None, measuring: dict[str, str]) -> str:
    """'round 2 of 3 · 40/96 processes · 1 min 10 s elapsed · about 2 min 05 s left · numpy n=1e6'."""
    parts = []
    if progress is not None:
        parts.append(f"round {progress.round + 1} of {max(progress.rounds, progress.round + 1)}")
        parts.append(f"{progress.done}/{progress.planned} processes")
        parts.append(f"{duration(progress.elapsed_s)} elapsed")
        if progress.left_s is not None and progress.done:
            parts.append(f"about {duration(progress.left_s)} left")
    if measuring:
        parts.append(" | ".join(f"{n}: {c}" if n != "local" else c for n, c in sorted(measuring.items())))
    return " · ".join(parts)


class LiveRun:
    """The live view of one run: feed it `started`, `result` and `progress`, use it as a context."""

    def __init__(self, console: Console, run: RunRecord, total_cells: int) -> None:
        self.console = console
        self.run = run
        self.total = total_cells
        self.terminal = console.is_terminal
        self.cells: dict[tuple[Any, ...], CellRecord] = {}
        self.final: set[tuple[Any, ...]] = set()
        self.measuring: dict[str, str] = {}
        self.progress: RoundsProgress | None = None
        self.live = Live(console=console, transient=True, auto_refresh=False) if self.terminal else None
        self.last_round = 0

    def __enter__(self) -> LiveRun:
        if self.live is not None:
            self.live.__enter__()
            self._refresh()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    @staticmethod
    def key(cell: CellRecord) -> tuple[Any, ...]:
        # the run too: with --against the other build's cells come in beside this run's
        return (
            cell.run_id,
            cell.workload,
            cell.backend,
            cell.size,
            params_key(cell.params),
            machine_label(cell.machine),
        )

    def plan(self, cells: int) -> None:
        """How many cells (one per machine on a cluster) the run measures."""
        self.total = cells

    def started(self, spec: CellSpec, node: str) -> None:
        self.measuring[node] = spec_label(spec)
        self._refresh()

    def result(self, cell: CellRecord, final: bool) -> None:
        key = self.key(cell)
        self.cells[key] = cell
        if final:
            self.final.add(key)
            if not self.terminal:
                text = Text(f"{len(self.final)}/{self.total} ")
                other = f" (run {cell.run_id}: the other build)" if cell.run_id != self.run.run_id else ""
                text.append(spec_label_of(cell) + other + ": ")
                text.append(cell_text(cell))
                self.console.print(text, soft_wrap=True, highlight=False)
        self._refresh()

    def advance(self, progress: RoundsProgress) -> None:
        if not self.terminal and progress.round > self.last_round:
            self.console.print(
                f"round {self.last_round + 1} done · {status_line(progress, {})}", highlight=False
            )
        self.last_round = progress.round
        self.progress = progress
        self._refresh()

    def _render(self, cell: CellRecord) -> Text:
        text = cell_text(cell)
        if self.key(cell) not in self.final:
            text.stylize("dim")
        return text

    def _refresh(self) -> None:
        if self.live is None:
            return
        # this run's cells (the other build's of --against are measured beside them, not shown)
        ordered = sorted((c for c in self.cells.values() if c.run_id == self.run.run_id), key=_table_order)
        tables = run_tables(self.run, ordered, self._render, "median ±95% CI so far (dim: rounds to come)")
        status = Text(status_line(self.progress, self.measuring), style="bold")
        self.live.update(Group(*tables, status), refresh=True)


def spec_label_of(cell: CellRecord) -> str:
    params = f" · {fmt.params_label(cell.params)}" if cell.params else ""
    return f"{cell.workload} · {cell.backend} · n={fmt.size_label(cell.size)}{params}"


def _table_order(cell: CellRecord) -> tuple[Any, ...]:
    from jitlab.backends.registry import backend_rank

    return (cell.workload, backend_rank(cell.backend), cell.size, params_key(cell.params))
