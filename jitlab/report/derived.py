"""The derived tables of a run (speed-ups against a baseline, achieved rates, the flat region of a
swept parameter) as plain data: the `derived` object of `--json` and the HTML report's tables.

The terminal prints the same figures (`speedup.print_derived`); both come from `speedup.speedups`
and `throughput.rates`, so the three outputs cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jitlab import formatting as fmt
from jitlab.report.speedup import CAPTION, find_workload, speedup_text, speedups
from jitlab.report.throughput import FLAT_TOLERANCE, RATE_COLUMNS, _order, flat_up_to, rates
from jitlab.store import CellRecord, RunRecord
from jitlab.store.identity import by_machine


@dataclass
class Grid:
    """A table ready to show: a title, column names, rows of strings, and a caption."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass
class WorkloadDerived:
    workload: str
    speedups: list[dict[str, Any]] = field(default_factory=list)
    rates: list[dict[str, Any]] = field(default_factory=list)
    flat: dict[str, Any] | None = None
    #: the machine whose cells these are, when the run has several ("" otherwise)
    machine: str = ""

    def to_json(self) -> dict[str, Any]:
        data = {"workload": self.workload, "speedups": self.speedups, "rates": self.rates, "flat": self.flat}
        return {**data, "machine": self.machine} if self.machine else data


def _peak_bandwidth() -> float | None:
    from jitlab.machine.peaks import cached_peaks

    peaks = cached_peaks()
    return peaks.bandwidth_bytes_per_s if peaks is not None else None


def workload_derived(run: RunRecord, name: str, cells: Sequence[CellRecord]) -> WorkloadDerived | None:
    """Speed-ups, rates and the flat region of workload `name`, for the parts it declares; None when
    it declares none (or its file is gone)."""
    workload = find_workload(run, name)
    if workload is None:
        return None
    group = [c for c in cells if c.workload == name]
    derived = WorkloadDerived(name)
    baseline = getattr(workload, "baseline", None)
    if baseline is not None:
        derived.speedups = [s.to_json() for s in speedups(group, baseline)]
    counts = getattr(workload, "throughput", None)
    if counts is not None:
        peak = _peak_bandwidth()
        for cell in sorted((c for c in group if c.ok and c.samples_s), key=_order):
            row: dict[str, Any] = {
                "backend": cell.backend,
                "params": dict(cell.params),
                "size": cell.size,
                "median_s": cell.summary.median,
                **rates(cell, counts),
            }
            if peak and "bytes_per_s" in row:
                row["bandwidth_peak_share"] = row["bytes_per_s"] / peak
            derived.rates.append(row)
    plot_x = getattr(workload, "plot_x", None)
    if plot_x:
        flat = flat_up_to(group, plot_x)
        if flat:
            derived.flat = {"parameter": plot_x, "tolerance": FLAT_TOLERANCE, "up_to": flat}
    if not (derived.speedups or derived.rates or derived.flat):
        return None
    return derived


def run_derived(run: RunRecord, cells: Sequence[CellRecord]) -> list[WorkloadDerived]:
    """Every workload's derived tables; one set per machine when several measured the run (a
    speed-up never divides one machine's time by another's)."""
    found = []
    for name in dict.fromkeys(c.workload for c in cells):
        for machine, group in by_machine(c for c in cells if c.workload == name).items():
            derived = workload_derived(run, name, group)
            if derived is not None:
                derived.machine = machine
                found.append(derived)
    return found


def _label(backend: str, params: dict[str, Any]) -> str:
    label = fmt.params_label(params)
    return f"{backend} ({label})" if label else backend


def _title(derived: WorkloadDerived) -> str:
    return derived.workload + (f" · on {derived.machine}" if derived.machine else "")


def derived_grids(derived: WorkloadDerived) -> list[Grid]:
    """The speed-up table (cells × sizes) and the rates table, as strings for the HTML report."""
    grids = []
    if derived.speedups:
        sizes = sorted({row["size"] for row in derived.speedups})
        by_label: dict[str, dict[int, dict[str, Any]]] = {}
        for row in derived.speedups:
            by_label.setdefault(_label(row["backend"], row["params"]), {})[row["size"]] = row
        rows = []
        for label, by_size in by_label.items():
            line = [label]
            for size in sizes:
                row = by_size.get(size)
                if row is None:
                    line.append("-")
                elif row["is_baseline"]:
                    line.append(f"baseline {fmt.seconds(row['median_s'])}")
                else:
                    line.append(speedup_text(row["speedup"], row["speedup_ci95"], row["speedup_method"]))
            rows.append(line)
        grids.append(
            Grid(
                f"{_title(derived)}: speed-up against the baseline",
                ["cell"] + [f"n={fmt.size_label(n)}" for n in sizes],
                rows,
                CAPTION,
            )
        )
    if derived.rates:
        declared = [column for column in RATE_COLUMNS if any(column[0] in row for row in derived.rates)]
        with_share = any("bandwidth_peak_share" in row for row in derived.rates)
        columns = ["cell", "n", "median"] + [title for _, title, _ in declared]
        columns += ["% of peak bandwidth"] if with_share else []
        rows = []
        for row in derived.rates:
            line = [
                _label(row["backend"], row["params"]),
                fmt.size_label(row["size"]),
                fmt.seconds(row["median_s"]),
            ]
            line += [render(row[key]) if key in row else "-" for key, _, render in declared]
            if with_share:
                share = row.get("bandwidth_peak_share")
                line.append(f"{share:.0%}" if share is not None else "-")
            rows.append(line)
        grids.append(
            Grid(f"{_title(derived)}: achieved rates", columns, rows, "rate = work of one call / median time")
        )
    return grids


def flat_text(derived: WorkloadDerived) -> str | None:
    if not derived.flat:
        return None
    x = derived.flat["parameter"]
    parts = ", ".join(f"{label}: {x} ≤ {value}" for label, value in derived.flat["up_to"].items())
    return f"time within {derived.flat['tolerance']:.0%} of the smallest {x}: {parts}"
