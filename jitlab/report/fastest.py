"""Which backend won, and by how much: the closing lines of a run's terminal output, its JSON
`fastest` list and the HTML report's summary.

Cells are grouped into alternatives for the same job: for a workload that declares a baseline
(`workload.baseline`), the cells compared with the same baseline cell at the same size (the sampler's
single-input variants, its batched ones); otherwise the cells with the same parameters at the same
size (fusion's k = 4 is another job than k = 8). In each group the fastest median wins; its ratio is
taken against NumPy when NumPy ran in the group (the usual yardstick of numeric Python), else against
the workload's baseline cell, else against the runner-up. Ratios come from the same rounds when the
run was measured in rounds (`jitlab.report.round_ratios`: the machine's drift cancels), with their
95% interval. Cells whose order against the winner is not established are named as tied: the
interval of their per-round ratio holds 1, or, without rounds, their 95% intervals overlap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from jitlab import formatting as fmt
from jitlab.report.round_ratios import RoundRatio, round_ratio
from jitlab.store import CellRecord, RunRecord
from jitlab.store.database import params_key
from jitlab.store.identity import by_machine, machine_label

#: the backend every ratio is taken against when it ran
YARDSTICK = "numpy"
#: why two cells are tied, as the closing lines say it
TIE_RULE = "the order is not established at 95%"

BaselineFn = Callable[[str, dict[str, Any]], tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Fastest:
    """The winner of one group of cells at one size, and its reference."""

    workload: str
    size: int
    #: what the group's cells share, e.g. "k=4" or "against torch (variant=naive)"; "" when nothing
    group: str
    cell: CellRecord
    reference: CellRecord | None
    #: "numpy", "baseline" or "runner-up" (None without a reference: a group of one cell)
    reference_kind: str | None
    tied: tuple[CellRecord, ...] = ()
    #: the machine whose cells were compared, when the run has several ("" otherwise)
    machine: str = ""

    @property
    def ratio(self) -> float | None:
        """How many times faster than the reference: per round when both were measured in rounds
        (`jitlab.report.round_ratios`), else the ratio of medians."""
        found = self.round_ratio
        return None if found is None else found.ratio

    @cached_property
    def round_ratio(self) -> RoundRatio | None:
        if self.reference is None:
            return None
        return round_ratio(self.reference, self.cell)

    def to_json(self) -> dict[str, Any]:
        s = self.cell.summary
        ref = self.reference
        return {
            "workload": self.workload,
            "size": self.size,
            "group": self.group,
            "backend": self.cell.backend,
            "params": dict(self.cell.params),
            "median_s": s.median,
            "ci95_s": [s.ci_low, s.ci_high],
            "reference": None
            if ref is None
            else {
                "kind": self.reference_kind,
                "backend": ref.backend,
                "params": dict(ref.params),
                "median_s": ref.summary.median,
            },
            "ratio": self.ratio,
            "ratio_ci95": None
            if self.round_ratio is None or self.round_ratio.ci_low is None
            else [self.round_ratio.ci_low, self.round_ratio.ci_high],
            "ratio_method": None if self.round_ratio is None else self.round_ratio.method,
            "tied_with": [cell_label(c) for c in self.tied],
            "machine": self.machine or machine_label(self.cell.machine),
        }


def cell_label(cell: CellRecord) -> str:
    params = fmt.params_label(cell.params)
    return f"{cell.backend} ({params})" if params else cell.backend


def _measured(cells: Sequence[CellRecord]) -> list[CellRecord]:
    return [c for c in cells if c.ok and c.samples_s and min(c.samples_s) > 0]


def _groups(
    cells: Sequence[CellRecord], baseline: BaselineFn | None
) -> dict[tuple[int, str], tuple[str, list[CellRecord], tuple[str, str] | None]]:
    """(size, group key) -> (group label, cells, baseline cell key or None)."""
    groups: dict[tuple[int, str], tuple[str, list[CellRecord], tuple[str, str] | None]] = {}
    for cell in cells:
        if baseline is not None:
            base_backend, base_params = baseline(cell.backend, dict(cell.params))
            base_key = (base_backend, params_key(base_params))
            params = fmt.params_label(base_params)
            label = f"against {base_backend}" + (f" ({params})" if params else "")
            key = (cell.size, "|".join(base_key))
        else:
            base_key = None
            label = fmt.params_label(cell.params)
            key = (cell.size, params_key(cell.params))
        groups.setdefault(key, (label, [], base_key))[1].append(cell)
    return groups


def fastest_cells(
    workload: str, cells: Sequence[CellRecord], baseline: BaselineFn | None = None
) -> list[Fastest]:
    """The winner of every group of `workload`'s measured cells, by group then size."""
    measured = _measured([c for c in cells if c.workload == workload])
    found = []
    for (size, _), (label, group, base_key) in _groups(measured, baseline).items():
        ranked = sorted(group, key=lambda c: c.summary.median)
        best, others = ranked[0], ranked[1:]
        reference, kind = None, None
        numpy_cells = [c for c in others if c.backend == YARDSTICK]
        base_cells = [c for c in others if base_key and (c.backend, params_key(c.params)) == base_key]
        if numpy_cells:
            reference, kind = numpy_cells[0], "numpy"
        elif base_cells:
            reference, kind = base_cells[0], "baseline"
        elif others:
            reference, kind = others[0], "runner-up"
        tied = tuple(c for c in others if _tied(best, c))
        found.append(Fastest(workload, size, label, best, reference, kind, tied))
    return sorted(found, key=lambda f: (f.group, f.size))


def _tied(best: CellRecord, other: CellRecord) -> bool:
    """The order of two cells is not established: per round, the interval of their ratio holds 1;
    without rounds, their 95% intervals overlap."""
    found = round_ratio(other, best)
    if found.ci_low is not None:
        return found.ci_low <= 1.0
    return other.summary.count >= 2 and other.summary.ci_low <= best.summary.ci_high


def run_fastest(run: RunRecord, cells: Sequence[CellRecord]) -> list[Fastest]:
    """`fastest_cells` for every workload of the run, with each workload's declared baseline (a
    workload whose file is gone is grouped by parameters); per machine when several measured the
    run, since a race between machines would rank hardware, not backends."""
    from jitlab.report.speedup import find_workload

    found = []
    for name in dict.fromkeys(c.workload for c in cells):
        workload = find_workload(run, name)
        for machine, group in by_machine(c for c in cells if c.workload == name).items():
            winners = fastest_cells(name, group, getattr(workload, "baseline", None))
            found += [replace(f, machine=machine) for f in winners]
    return found


#: said instead of an interval of a ratio wider than the ratio itself
UNRESOLVED_RATIO = "its interval unresolved: the machine was too noisy, see the warnings above"


def ratio_text(found: RoundRatio) -> str:
    """'4.07× [3.90, 4.25]', or the ratio with a word where its interval is wider than itself."""
    if found.ci_low is None or found.ci_high is None:
        return f"{found.ratio:.2f}×"
    if not found.ci_high - found.ci_low < found.ratio:
        return f"{found.ratio:.2f}× ({UNRESOLVED_RATIO})"
    return f"{found.ratio:.2f}× [{found.ci_low:.2f}, {found.ci_high:.2f}]"


def _phrase(f: Fastest) -> str:
    """One size's winner. A winner tied with its reference gets no "faster than": a tie and a speed-up
    are never said of the same pair; with other ties the ratio is said as a speed, not as faster."""
    text = f"n={fmt.size_label(f.size)} {cell_label(f.cell)} {fmt.seconds(f.cell.summary.median)}"
    found = f.round_ratio
    if f.tied:
        text += f", tied with {', '.join(cell_label(c) for c in f.tied)} ({TIE_RULE})"
    if f.reference is not None and found is not None and f.reference not in f.tied:
        what = {"runner-up": "the runner-up, ", "baseline": "the baseline, "}.get(f.reference_kind or "", "")
        relation = "the speed of" if f.tied else "faster than"
        text += f"{';' if f.tied else ','} {ratio_text(found)} {relation} {what}{cell_label(f.reference)}"
    return text


def fastest_lines(found: Sequence[Fastest]) -> list[str]:
    """One line per workload and group: 'fastest · pi: n=1e4 numpy 241 µs, 15.00× faster than python; ...'."""
    lines: dict[tuple[str, str, str], list[str]] = {}
    for f in found:
        lines.setdefault((f.workload, f.group, f.machine), []).append(_phrase(f))
    return [
        f"fastest · {workload}"
        + (f" ({group})" if group else "")
        + (f" on {machine}" if machine else "")
        + ": "
        + "; ".join(parts)
        for (workload, group, machine), parts in lines.items()
    ]
