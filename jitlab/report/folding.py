"""A run's warnings folded by cause: one symbol per cell in the table, a few lines below it.

A run on a shared machine gives most cells a warning, and most say the same thing ("CI ±31% after 40
samples in 3 processes..."). Printed one cell per line they bury the table. So each warning is
classified by its cause (`CAUSES`), each cell shows the symbol of its most important cause, and
below the table one line per cause counts its cells and names a few, with the drift the canary saw
when the machine's speed is the likely reason. Every warning stays in `--details` and `--json`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitlab import formatting as fmt
from jitlab.engine.canary import Drift, drift_of, readings_of
from jitlab.engine.load import Load
from jitlab.engine.slow_spells import SLOW_WARNING
from jitlab.engine.timing import CI_WARNING_PREFIX
from jitlab.store import CellRecord
from jitlab.store.identity import by_machine, machine_label


@dataclass(frozen=True)
class Cause:
    key: str
    symbol: str
    #: what the folded line says after "N cells: "
    title: str


#: causes in order of importance: a cell shows the symbol of its first one
CAUSES = (
    Cause("partial", "…", "measured in fewer rounds than planned (the run was interrupted: --resume)"),
    Cause("disagree", "~", "processes disagree: the CI of the median is wider than the target"),
    Cause("ci", "~", "CI of the median wider than the target"),
    Cause("fewer", "*", "fewer processes than asked (the budget paid for no more: raise --budget)"),
    Cause(
        "busy",
        "!",
        "measured partly while the machine was busy (a process waited for a CPU, or the canary ran slow)",
    ),
    Cause("unstable", "!", "unstable: the IQR is over 10% of the median"),
    Cause("other", "!", ""),
)
BY_KEY = {c.key: c for c in CAUSES}
#: folded lines printed at most (the rest: `--details`)
MAX_LINES = 6
#: lines below the table at most: the headline, the canary's drift, the causes and the pointer
MAX_TOTAL_LINES = 8
#: cells named as examples on a folded line
EXAMPLES = 4
_PROCESS_LABEL = re.compile(r"^process \d+: ")
_NUMBER = re.compile(r"[-+±]?\d[\d.,e+-]*")


def cause_of(warning: str) -> tuple[str, str]:
    """(cause key, the warning without its process label) of one warning. (Whether a cell is
    partial is its state, `CellRecord.partial`, not a warning's cause: see `warning_causes`.)"""
    text = _PROCESS_LABEL.sub("", warning)
    if text.startswith(SLOW_WARNING):
        return "busy", text
    if text.startswith(CI_WARNING_PREFIX):
        return ("disagree" if "processes" in text else "ci"), text
    if "planned processes" in text or re.search(r"\d+ of \d+ processes", text):
        return "fewer", text
    if text.startswith("unstable"):
        return "unstable", text
    return "other", text


def warning_causes(cell: CellRecord) -> list[tuple[str, str]]:
    """(cause key, text) of each of a cell's warnings. A partial cell (stored before its last
    round) has the `partial` cause. The one warning of such a cell that counts its processes
    against those planned is the note of that state: no cell is judged short of processes before
    its last round, so it is never a shortfall (`jitlab.engine.processes.merge_process_results`)."""
    found = [cause_of(w) for w in cell.warnings]
    if not cell.partial:
        return found
    return [("partial", BY_KEY["partial"].title)] + [(k, t) for k, t in found if k != "fewer"]


def cell_causes(cell: CellRecord) -> list[str]:
    """The cause keys of a cell's warnings, most important first, each once."""
    found = {key for key, _ in warning_causes(cell)}
    return [c.key for c in CAUSES if c.key in found]


def cell_symbol(cell: CellRecord) -> str:
    """The one symbol a cell shows in the table ("" without warnings)."""
    causes = cell_causes(cell)
    return BY_KEY[causes[0]].symbol if causes else ""


def wide(cell: CellRecord) -> bool:
    """A CI wider than the value itself: the table prints no CI for such a cell (the folded line
    says why)."""
    return cell.ok and bool(cell.samples_s) and cell.summary.ci_half_width >= 1.0


@dataclass
class Fold:
    """One folded line: a cause (or, for other warnings, one kind of text) and its cells."""

    cause: Cause
    text: str
    cells: list[CellRecord] = field(default_factory=list)


def _label(cell: CellRecord, several: bool) -> str:
    label = f"{cell.backend} n={fmt.size_label(cell.size)}"
    if cell.params:
        label += f" {fmt.params_label(cell.params)}"
    if several and cell.machine:
        label += f" on {machine_label(cell.machine)}"
    return label


def folds(cells: Sequence[CellRecord]) -> list[Fold]:
    """The folded lines of some cells, largest first: a cell counts once per cause it has; warnings
    of no known cause are folded by their text with numbers left out."""
    found: dict[tuple[str, str], Fold] = {}
    for cell in cells:
        seen: set[tuple[str, str]] = set()
        for key, text in warning_causes(cell):
            group = (key, _NUMBER.sub("#", text) if key == "other" else "")
            if group in seen:
                continue
            seen.add(group)
            fold = found.setdefault(group, Fold(BY_KEY[key], text if key == "other" else BY_KEY[key].title))
            fold.cells.append(cell)
    order = {c.key: i for i, c in enumerate(CAUSES)}
    return sorted(found.values(), key=lambda f: (-len(f.cells), order[f.cause.key]))


def drift_by_machine(cells: Sequence[CellRecord]) -> dict[str, Drift]:
    """The canary's drift on each machine that measured some of `cells` (machines without canary
    readings, e.g. runs of older jitlabs, are left out)."""
    out = {}
    for machine, group in by_machine(cells).items():
        drift = drift_of(readings_of(c.process_details for c in group))
        if drift is not None:
            out[machine] = drift
    return out


def typical_ci(cells: Sequence[CellRecord]) -> float | None:
    """The median CI half-width of the measured cells."""
    widths = [c.summary.ci_half_width for c in cells if c.ok and c.samples_s and c.summary.count >= 2]
    return float(np.median(widths)) if widths else None


def drift_matters(drift: Drift, cells: Sequence[CellRecord]) -> bool:
    """The machine's speed varied by more than the cells' intervals allow: more than a typical
    cell's whole interval (twice its half-width)."""
    typical = typical_ci(cells)
    return typical is not None and drift.drift > 2 * typical


def drift_phrase(machine: str, drift: Drift) -> str:
    probe = "pure Python" if drift.probe == "python_s" else "memory-bound NumPy"
    where = f"{machine}'s" if machine else "this machine's"
    return f"{where} speed drifted {drift.drift:.0%} during the run (canary, {probe} probe)"


def fold_line(fold: Fold, several: bool = False) -> str:
    """One folded line: '~ 23 cells: processes disagree: ... [python n=1e5, ..., 19 more]'. The
    terminal and the HTML report print the same line."""
    count = len(fold.cells)
    text = f"{fold.cause.symbol} {count} cell{'s' if count != 1 else ''}: {fold.text}"
    wide_cells = [c for c in fold.cells if wide(c)] if fold.cause.key in ("disagree", "ci") else []
    if wide_cells:
        text += f" ({len(wide_cells)} with a CI wider than the value: shown without one)"
    names = ", ".join(_label(c, several) for c in fold.cells[:EXAMPLES])
    more = count - EXAMPLES
    return text + f" [{names}{f', {more} more' if more > 0 else ''}]"


def cause_lines(
    cells: Sequence[CellRecord], limit: int = MAX_LINES, rest: str = "see --details"
) -> list[str]:
    """One line per cause, largest first, and a last line pointing to `rest` (where every warning
    is) for the kinds of warning left out."""
    several = len(by_machine(cells)) > 1
    all_folds = folds(cells)
    lines = [fold_line(fold, several) for fold in all_folds[:limit]]
    if len(all_folds) > limit:
        lines.append(f"… {len(all_folds) - limit} more kinds of warning: {rest}")
    return lines


def busiest_load(cells: Sequence[CellRecord]) -> tuple[int, Load | None]:
    """(how many cells had a process that ran busy, the busiest process's load)."""
    busy, worst = 0, None
    for cell in cells:
        found = Load.from_json(cell.load_json())
        if found is not None and found.busy:
            busy += 1
            if worst is None or (found.wait_share or 0) + (found.steal_share or 0) > (
                worst.wait_share or 0
            ) + (worst.steal_share or 0):
                worst = found
    return busy, worst


def headline(cells: Sequence[CellRecord]) -> str | None:
    """One line above the folded ones when most measured cells carry warnings: the likely cause
    (load, the machine's drift, or too small a budget) and what to do about it."""
    measured = [c for c in cells if c.measured]
    warned = [c for c in measured if c.warnings]
    if not measured or 2 * len(warned) <= len(measured):
        return None
    start = f"‼ most cells ({len(warned)} of {len(measured)}) carry warnings: "
    busy, worst = busiest_load(measured)
    if worst is not None and 2 * busy >= len(warned):
        return (
            start + f"the machine was busy while {busy} of them were measured (the busiest process "
            f"{worst.phrase()}), so their times hold waiting as well as work; measure on a quiet machine "
            "(`jitlab selfcheck` says when it is one), or gate on counted instructions (--measure "
            "instructions), which load does not change"
        )
    drifts = [d for machine, d in drift_by_machine(measured).items() if drift_matters(d, measured)]
    if drifts:
        return (
            start + f"the machine's own speed drifted {max(d.drift for d in drifts):.0%} during the run "
            "(drift canary), more than the cells' intervals allow; the closing lines compare backends per "
            "round, which takes it out, but a change between runs needs them repeated alternately (or "
            "--measure instructions) to be believed"
        )
    top = folds(measured)[0]
    return (
        start
        + f"most often {top.cause.title or top.text}: raise --budget (and --processes), or measure on a quieter machine"
    )


def folded_lines(cells: Sequence[CellRecord], limit: int = MAX_LINES) -> list[str]:
    """The lines below the table, at most `MAX_TOTAL_LINES`: a headline when most cells carry
    warnings, the canary's drift when it is more than the cells' intervals allow, one line per
    cause, and a pointer to `--details` for what is left out."""
    machines = by_machine(cells)
    top = headline(cells)
    lines = [top] if top else []
    lines += [
        f"≈ {drift_phrase(machine if len(machines) > 1 else '', drift)}: more than the cells' intervals "
        "allow (their processes ran at different speeds); the fastest lines and speed-up tables compare "
        "cells per round where both had several processes, which takes the drift out"
        for machine, drift in drift_by_machine(cells).items()
        if drift_matters(drift, machines[machine])
    ]
    return lines + cause_lines(cells, max(1, min(limit, MAX_TOTAL_LINES - 1 - len(lines))))


def drift_json(cells: Sequence[CellRecord]) -> dict[str, Any]:
    """The canary's findings per machine, for the run's JSON: drift, probes, and every reading."""
    out: dict[str, Any] = {}
    for machine, group in by_machine(cells).items():
        readings = readings_of(c.process_details for c in group)
        drift = drift_of(readings)
        busy, worst = busiest_load(group)
        out[machine] = {
            **(drift.to_json() if drift else {"readings": len(readings), "drift": None}),
            "warning": bool(drift and drift_matters(drift, group)),
            "series": readings,
            # the load the run met: cells with a process that ran busy, and the busiest process's load
            "busy_cells": busy,
            "busiest_load": worst.to_json() if worst else None,
        }
    return out
