"""Each backend's time per item beside this machine's limit, and what bounds it.

For a workload that declares its work (`workload.work`, see `jitlab.workloads.work`), the limit of
one call is the slowest of three parts, each the work divided by a peak of `jitlab machine`:
random-number generation (random words / the counter-based generator's rate on the threads the
backend uses), memory (bytes / the bandwidth) and overhead (framework calls / the framework's
per-call rate). The part that takes longest is what bounds the backend; the measured time over the
limit says how far it is from it. Peaks are read from the cache, never measured here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from jitlab import formatting as fmt
from jitlab.backends.registry import backend_rank
from jitlab.store import CellRecord, RunRecord
from jitlab.workloads.work import Work

WorkFn = Callable[[int, dict[str, Any], str], Work]

BOUNDS = ("random-number generation", "memory", "overhead")


@dataclass(frozen=True)
class Limit:
    """One cell's measured time per item beside the machine's limit for its work."""

    cell: CellRecord
    threads: int
    #: seconds per call each part needs at the peaks; None where the peak was not measured
    parts: dict[str, float | None]

    @property
    def per_item_s(self) -> float:
        return self.cell.summary.median / self.cell.size

    @property
    def limit_s(self) -> float | None:
        """Seconds per call at the machine's limit: the slowest known part (None if none is known)."""
        known = [v for v in self.parts.values() if v is not None]
        return max(known) if known else None

    @property
    def bound(self) -> str | None:
        known = {k: v for k, v in self.parts.items() if v is not None}
        return max(known, key=known.__getitem__) if known else None

    @property
    def times_limit(self) -> float | None:
        limit = self.limit_s
        return self.cell.summary.median / limit if limit else None


def limits(cells: Sequence[CellRecord], work: WorkFn, peaks: Any) -> list[Limit]:
    """The limit of every ok CPU cell at its backend's largest size, for the cells measured on the
    machine of `peaks` (another machine's cells, and cells on a GPU, have limits these peaks do not
    give)."""
    from jitlab.store.machine import machine_fingerprint

    ours = machine_fingerprint(peaks.machine)
    largest: dict[str, CellRecord] = {}
    for cell in cells:
        if not (cell.ok and cell.samples_s) or not (cell.device or "cpu").startswith("cpu"):
            continue
        if cell.machine and machine_fingerprint(cell.machine) != ours:
            continue
        if cell.backend not in largest or cell.size > largest[cell.backend].size:
            largest[cell.backend] = cell
    found = []
    for cell in sorted(largest.values(), key=lambda c: backend_rank(c.backend)):
        w = work(cell.size, dict(cell.params), cell.backend)
        threads = w.threads or cell.threads or 1
        rate = peaks.random_rate(threads)
        overhead = peaks.overhead_s.get(w.framework)
        parts = {
            "random-number generation": w.random_words / rate if rate else None,
            "memory": w.memory_bytes / peaks.bandwidth_bytes_per_s,
            "overhead": w.calls * overhead if overhead is not None else None,
        }
        found.append(Limit(cell, threads, parts))
    return found


def _per_item(seconds: float | None, size: int) -> str:
    return "-" if seconds is None else fmt.seconds(seconds / size)


def limits_table(run: RunRecord, workload: str, found: Sequence[Limit], peaks: Any) -> Table:
    table = Table(
        title=f"run {run.run_id} · {workload}: time per item beside this machine's limit (largest size)",
        title_justify="left",
        caption=limits_caption(peaks),
    )
    for name in ("backend", "n", "threads", "time / item", "limit / item", "× limit", "bound by"):
        table.add_column(name, justify="left" if name in ("backend", "bound by") else "right")
    table.add_column("parts of the limit / item (RNG · memory · overhead)", style="dim")
    for limit in found:
        size = limit.cell.size
        times = limit.times_limit
        parts = " · ".join(_per_item(limit.parts[b], size) for b in BOUNDS)
        table.add_row(
            limit.cell.backend,
            fmt.size_label(size),
            str(limit.threads),
            fmt.seconds(limit.per_item_s),
            _per_item(limit.limit_s, size),
            f"{times:.1f}×" if times is not None else "-",
            limit.bound or "-",
            parts,
        )
    return table


def limits_caption(peaks: Any) -> str:
    rates = ", ".join(
        f"{fmt.si(v)}/s on {k} thread{'s' if k != '1' else ''}"
        for k, v in sorted(peaks.random_words_per_s.items(), key=lambda item: int(item[0]))
    )
    text = f"peaks of `jitlab machine` ({peaks.measured_at}): random words {rates or 'not measured'}"
    text += f", memory {peaks.bandwidth_bytes_per_s / 1e9:.3g} GB/s"
    if peaks.quick:
        text += " (quick mode: not real peaks)"
    return text + "; limit = the slowest part; × limit = median / limit"


def print_limits(console: Any, run: RunRecord, cells: Sequence[CellRecord]) -> None:
    """With `--details`: the limits table of each workload that declares its work."""
    from rich.text import Text

    from jitlab.machine.peaks import cached_peaks
    from jitlab.report.speedup import find_workload

    unread = object()
    peaks: Any = unread  # read once, at the first workload that declares its work
    for name in dict.fromkeys(c.workload for c in cells):
        workload = find_workload(run, name)
        work = getattr(workload, "work", None) if workload is not None else None
        if work is None:
            continue
        if peaks is unread:
            peaks = cached_peaks()
        if peaks is None:
            console.print(
                Text(
                    f"{name}: run `jitlab machine` to see each backend beside this machine's limit",
                    style="dim",
                )
            )
            continue
        found = limits([c for c in cells if c.workload == name], work, peaks)
        if found:
            console.print(limits_table(run, name, found, peaks))
        else:
            console.print(
                Text(f"{name}: no cell of this machine on its CPU to set beside its limit", style="dim")
            )
