"""What the HTML report shows, as plain data for the template: runs with their machine, one section
per workload with figures and tables, the warnings folded by cause as the terminal prints them (each
cell's own warnings in a collapsed list), failed cells, and comparisons against the first run. All
strings are left raw here; the template escapes them (autoescape), and only figures, which
`figures.svg_markup` makes safe, are marked as markup."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from markupsafe import Markup

from jitlab import formatting as fmt
from jitlab.compare.runs import RunComparison, compare_cells
from jitlab.compare.table import UNRESOLVED
from jitlab.engine.canary import readings_of
from jitlab.errors import UserError
from jitlab.formatting import params_label
from jitlab.report.derived import Grid, derived_grids, flat_text, run_derived
from jitlab.report.fastest import fastest_lines, run_fastest
from jitlab.report.folding import (
    cause_lines,
    cell_symbol,
    drift_by_machine,
    drift_matters,
    drift_phrase,
    wide,
)
from jitlab.report.html.figures import canary_figure, comparison_figure, svg_markup, workload_figure
from jitlab.report.table import instructions_text
from jitlab.store import CellRecord, RunRecord, Store
from jitlab.store.identity import by_machine
from jitlab.store.machine import machine_fingerprint


@dataclass
class TableView:
    title: str
    columns: list[str]
    rows: list[dict[str, Any]]  # {"backend": str, "cells": [{"lines": [str], "status": str}]}


@dataclass
class WorkloadView:
    name: str
    figure: Markup | None
    tables: list[TableView]
    #: the warnings folded into one line per cause (`jitlab.report.folding`), as in the terminal
    folded: list[str]
    #: every warned cell with all its warnings: {"where": str, "symbol": str, "warnings": [str]}
    cell_warnings: list[dict[str, Any]]
    failed: list[dict[str, str]]
    #: "fastest · ..." lines, as the terminal prints them
    fastest: list[str] = field(default_factory=list)
    #: speed-up and rates tables of workloads that declare a baseline or a throughput
    derived: list[Grid] = field(default_factory=list)
    flat: str | None = None


@dataclass
class RunView:
    run: RunRecord
    machine_rows: list[tuple[str, str]]
    versions: list[tuple[str, str]]
    workloads: list[WorkloadView]
    counts: dict[str, int]
    #: the drift canary: a small plot of the machine's speed over the run, and its drift per machine
    canary_figure: Markup | None = None
    canary_lines: list[str] = field(default_factory=list)


@dataclass
class ComparisonView:
    comparison: RunComparison | None
    run_a: int
    run_b: int
    figure: Markup | None
    rows: list[dict[str, str]] = field(default_factory=list)
    geomeans: list[dict[str, str]] = field(default_factory=list)
    note: str | None = None


def cell_lines(cell: CellRecord) -> list[str]:
    if cell.ok and cell.instruction_summary is not None:  # counted under Valgrind, as the terminal shows
        return [instructions_text(cell).plain]
    if not cell.ok or not cell.samples_s:
        return [cell.status]
    s = cell.summary
    # as the terminal table: no CI wider than the value (the folded line says why), one symbol
    ci = "" if wide(cell) else f" ±{s.ci_half_width:.1%}"
    symbol = cell_symbol(cell)
    lines = [
        fmt.seconds(s.median) + (ci if s.count >= 6 else " (few samples)") + (f" {symbol}" if symbol else "")
    ]
    if s.noise_floor is not None:
        floor = f"±{s.noise_floor:.1%}" if s.noise_floor < 1 else "unresolved (>100%)"
        lines.append(f"noise {floor} ({s.processes} processes)")
    lines.append(f"first {fmt.seconds(cell.first_call_s)}")
    if cell.dispatch_s is not None:
        lines.append(f"dispatch {fmt.seconds(cell.dispatch_s)}")
    if cell.error is not None:
        lines.append(f"err {fmt.sci(cell.error)}")
    if cell.peak_rss_bytes:
        lines.append(f"rss {fmt.nbytes(cell.peak_rss_bytes)}")
    return lines


def workload_tables(workload: str, cells: Sequence[CellRecord]) -> list[TableView]:
    groups: dict[str, list[CellRecord]] = {}
    for cell in cells:
        groups.setdefault(params_label(cell.params), []).append(cell)
    tables = []
    for params, group in groups.items():
        sizes = sorted({c.size for c in group})
        backends = list(dict.fromkeys(c.backend for c in group))
        by_key = {(c.backend, c.size): c for c in group}
        rows = []
        for backend in backends:
            row_cells = []
            for size in sizes:
                cell = by_key.get((backend, size))
                if cell is None:
                    row_cells.append({"lines": ["-"], "status": "missing"})
                else:
                    unstable = cell.ok and bool(cell.samples_s) and cell.summary.unstable
                    row_cells.append(
                        {"lines": cell_lines(cell), "status": "unstable" if unstable else cell.status}
                    )
            rows.append({"backend": backend, "cells": row_cells})
        title = workload + (f" ({params})" if params else "")
        tables.append(TableView(title, [f"n={fmt.size_label(n)}" for n in sizes], rows))
    return tables


def _where(cell: CellRecord) -> str:
    params = f" ({params_label(cell.params)})" if cell.params else ""
    return f"{cell.backend} n={fmt.size_label(cell.size)}{params}"


def shown_warnings(cell: CellRecord) -> CellRecord:
    """The cell with the warnings the report shows: an unstable cell stored without an "unstable"
    warning (by an older jitlab) gets one from its samples, so it is folded and listed like the
    others."""
    if (
        cell.ok
        and cell.samples_s
        and cell.summary.unstable
        and not any("unstable" in w for w in cell.warnings)
    ):
        added = f"unstable: IQR is {cell.summary.spread:.0%} of the median"
        return replace(cell, warnings=(*cell.warnings, added))
    return cell


#: where the folded lines send a reader for the kinds of warning they leave out
REST = "every warning is in the list of cells below"


def workload_view(workload: str, cells: Sequence[CellRecord]) -> WorkloadView:
    figure = (
        svg_markup(workload_figure(workload, cells)) if any(c.ok and c.samples_s for c in cells) else None
    )
    warned = [shown_warnings(c) for c in cells]
    cell_warnings = [
        {"where": _where(c), "symbol": cell_symbol(c), "warnings": list(c.warnings)}
        for c in warned
        if c.warnings
    ]
    failed = [
        {
            "where": _where(c),
            "status": c.status,
            "reason": c.reason or "(no reason recorded)",
            "log": c.log or "",
        }
        for c in cells
        if not c.ok
    ]
    return WorkloadView(
        workload,
        figure,
        workload_tables(workload, warned),
        cause_lines(warned, rest=REST),
        cell_warnings,
        failed,
    )


def run_view(run: RunRecord, cells: Sequence[CellRecord]) -> RunView:
    m = run.machine
    options = run.run_options
    policy = options.policy
    machine_rows = [
        ("machine", machine_fingerprint(m)),
        ("CPU", str(m.get("cpu", "?"))),
        ("cores", f"{m.get('cores_physical', '?')} physical, {m.get('cores_logical', '?')} logical"),
        ("memory", fmt.nbytes(m.get("memory_bytes"))),
        ("GPUs", ", ".join(m.get("gpus") or []) or "none"),
        ("OS", str(m.get("os", "?"))),
        ("Python", str(m.get("python", "?"))),
        ("project commit", str(m.get("project_commit") or "-")),
        ("target", run.target),
        ("started / finished", f"{run.created_at} / {run.finished_at or '-'} ({run.status})"),
        ("threads", str(options.threads if options.threads is not None else "-")),
        ("budget per cell", f"{policy['budget_s']:g} s" if "budget_s" in policy else "-"),
    ]
    versions = sorted(
        (name, version or "not installed") for name, version in (m.get("backends") or {}).items()
    )
    workloads = list(dict.fromkeys(c.workload for c in cells))
    groups = by_machine(cells)
    if len(groups) > 1:  # one section per machine: a figure never mixes machines
        machine_rows.insert(1, ("measured on", ", ".join(groups)))
    sections = [
        (w, machine, group)
        for w in workloads
        for machine, on_machine in groups.items()
        if (group := [c for c in on_machine if c.workload == w])
    ]
    winners = run_fastest(run, cells)
    derived = {(d.workload, d.machine): d for d in run_derived(run, cells)}
    views = []
    for w, machine, group in sections:
        view = workload_view(f"{w} · on {machine}" if machine else w, group)
        view.fastest = fastest_lines([f for f in winners if (f.workload, f.machine) == (w, machine)])
        if (w, machine) in derived:
            view.derived = derived_grids(derived[(w, machine)])
            view.flat = flat_text(derived[(w, machine)])
        views.append(view)
    counts = {"cells": len(cells), "ok": sum(c.ok for c in cells), "failed": sum(not c.ok for c in cells)}
    view = RunView(run, machine_rows, versions, views, counts)
    readings = {m: readings_of(c.process_details for c in group) for m, group in groups.items()}
    readings = {m: r for m, r in readings.items() if len(r) >= 2}
    if readings:
        view.canary_figure = svg_markup(canary_figure(readings))
        view.canary_lines = [
            drift_phrase(machine, drift) + (": more than the cells' intervals allow" if warn else "")
            for machine, drift in drift_by_machine(cells).items()
            for warn in [drift_matters(drift, groups.get(machine, cells))]
        ]
    return view


def comparison_view(
    run_a: RunRecord, run_b: RunRecord, cells_a: list[CellRecord], cells_b: list[CellRecord]
) -> ComparisonView:
    try:
        comparison = compare_cells(run_a, run_b, cells_a, cells_b)
    except UserError as exc:
        return ComparisonView(None, run_a.run_id, run_b.run_id, None, note=str(exc))
    figure = comparison_figure(comparison)
    rows = []
    for c in comparison.cells:
        s = c.stats
        rows.append(
            {
                "cell": f"{c.workload} · {_where_key(c.backend, c.size, c.params)}",
                "a": fmt.seconds(c.median_a),
                "b": fmt.seconds(c.median_b),
                "change": f"{s.ratio - 1:+.1%}" if s else "-",
                "ci": "-"
                if not s
                else UNRESOLVED
                if s.unresolved
                else f"{s.ci_low - 1:+.1%} … {s.ci_high - 1:+.1%}",
                "p": f"{s.p_value:.2g}" if s else "-",
                "noise": "-"
                if not s
                else "unresolved"
                if s.margin >= 1
                else f"±{s.margin:.1%}" + (" (one process)" if s.margin_kind == "one-process floor" else ""),
                "why": s.reason if s else f"{c.status_a} → {c.status_b}",
                "verdict": c.verdict,
                "class": c.verdict if s else "failed",
            }
        )
    geomeans = [
        {
            "backend": backend,
            "cells": str(g.cells),
            "change": f"{g.ratio - 1:+.1%}",
            "ci": f"{g.ci_low - 1:+.1%} … {g.ci_high - 1:+.1%}",
            "class": "slower" if g.ci_low > 1 else "faster" if g.ci_high < 1 else "same",
        }
        for backend, g in comparison.geomeans.items()
    ]
    return ComparisonView(
        comparison, run_a.run_id, run_b.run_id, svg_markup(figure) if figure else None, rows, geomeans
    )


def _where_key(backend: str, size: int, params: dict[str, Any]) -> str:
    return f"{backend} n={fmt.size_label(size)}" + (f" ({params_label(params)})" if params else "")


def report_model(store: Store, run_ids: Sequence[int]) -> dict[str, Any]:
    """Everything the template needs for a report of `run_ids` (the first is the baseline)."""
    if not run_ids:
        raise UserError("give at least one run id: `jitlab runs` lists them")
    runs = [store.run(run_id) for run_id in run_ids]  # unknown ids are UserErrors
    run_ids = [run.run_id for run in runs]
    cells = {run.run_id: store.cells(run.run_id) for run in runs}
    comparisons = [
        comparison_view(runs[0], run, cells[runs[0].run_id], cells[run.run_id]) for run in runs[1:]
    ]
    return {
        "title": "jitlab report · runs " + ", ".join(str(r) for r in run_ids),
        "runs": [run_view(run, cells[run.run_id]) for run in runs],
        "comparisons": comparisons,
        "store": str(store.path),
    }
