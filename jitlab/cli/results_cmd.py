"""Reading stored runs back: `jitlab runs`, `show`, `export`, `plot`."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from jitlab.cli.app import app, console, json_option, store_option, with_envelope
from jitlab.errors import UserError
from jitlab.report.envelope import run_machines
from jitlab.report.export import STATUSES, run_json, run_summary, to_csv, to_json
from jitlab.report.table import print_run
from jitlab.store import CellRecord, RunRecord, Store
from jitlab.store.identity import by_machine, machine_label

#: what `jitlab export --format` accepts
EXPORT_FORMATS = ("csv", "json", "pyperf")


def open_store(path: str | None) -> Store:
    return Store(path, create=False)


def run_state(run: RunRecord, cells: list[CellRecord]) -> str:
    """The run's state as a reader needs it: "failed" for a run that finished without measuring any
    cell (the store keeps "finished": the run itself ended normally), else the stored status."""
    if run.status == "finished" and cells and not any(c.ok for c in cells):
        return "failed"
    return run.status


def machines_text(run: RunRecord, cells: list[CellRecord]) -> str:
    """The machine that measured the run (its name, else CPU and threads), or the names of the
    machines its cells were measured on."""
    machines = by_machine(cells)
    if len(machines) > 1:
        return f"{len(machines)} machines: " + ", ".join(machines)
    m = cells[0].machine if cells else run.machine
    return m.get("name") or f"{m.get('cpu', '?')} ×{m.get('cores_logical', '?')}"


@app.command("runs")
@store_option
@json_option
def runs_command(store_path: str | None, as_json: bool) -> None:
    """List the stored runs."""
    store = open_store(store_path)
    if as_json:
        entries, machines = [], []
        for run in store.runs():
            cells = store.cells(run.run_id)
            counts = {status: sum(c.status == status for c in cells) for status in STATUSES}
            measured_on = run_machines(run, cells)
            entries.append(
                {
                    **run_summary(run),
                    "state": run_state(run, cells),
                    "machine": machine_label(run.machine),
                    # the machines its cells were measured on, when not just the run's own
                    **({"machines": [machine_label(m) for m in measured_on]} if measured_on else {}),
                    "project_commit": run.machine.get("project_commit"),
                    "summary": {"cells": len(cells), **counts},
                }
            )
            machines += measured_on or [run.machine]
        payload = {"store": str(store.path), "runs": entries}
        print(json.dumps(with_envelope("runs", payload, machines=machines)))
        return
    table = Table(title=f"runs in {store.path}", title_justify="left")
    for column in ("run", "uuid", "started", "status", "target", "cells", "ok", "machine", "commit"):
        table.add_column(column)
    for run in store.runs():
        cells = store.cells(run.run_id)
        table.add_row(
            str(run.run_id),
            run.uuid[:8],
            run.created_at,
            run_state(run, cells),
            run.target,
            str(len(cells)),
            str(sum(c.ok for c in cells)),
            machines_text(run, cells),
            (run.machine.get("project_commit") or "-")[:12],
        )
    console.print(table)


@app.command("show")
@click.argument("run_id")
@click.option(
    "--details",
    is_flag=True,
    help="also print first call, error, dispatch and memory tables, and each backend's device and timing method",
)
@store_option
@json_option
def show_command(run_id: str, details: bool, store_path: str | None, as_json: bool) -> None:
    """Show a stored run's table (or JSON)."""
    store = open_store(store_path)
    run = store.run(run_id)
    cells = store.cells(run.run_id)
    if as_json:
        envelope = with_envelope("run", {}, machine=run.machine, machines=run_machines(run, cells))
        print(json.dumps({**envelope, **run_json(run, cells)}))
        return
    m = run.machine
    named = f"{m['name']}: " if m.get("name") else ""
    console.print(
        f"run {run.run_id} ({run.uuid[:8]}) · {run_state(run, cells)} · {run.created_at} · {named}{m.get('cpu')} "
        f"({m.get('cores_logical')} threads) · Python {m.get('python')} · threads {run.run_options.threads}",
        highlight=False,
    )
    print_run(console, run, cells, details=details)


@app.command("export")
@click.argument("run_id")
@click.option(
    "--format",
    "format",
    default="csv",
    show_default=True,
    help="csv, json (with raw samples) or pyperf (a pyperf JSON suite: `python -m pyperf show FILE`)",
)
@click.option("-o", "--output", default=None, help="file to write (default: stdout)")
@store_option
def export_command(run_id: str, format: str, output: str | None, store_path: str | None) -> None:
    """Export a run's cells as CSV, JSON or a pyperf suite."""
    if format not in EXPORT_FORMATS:
        raise UserError(f"--format {format!r} is not supported: use {', '.join(EXPORT_FORMATS)}")
    store = open_store(store_path)
    run = store.run(run_id)
    cells = store.cells(run.run_id)
    if format == "csv":
        text = to_csv(cells)
    elif format == "json":
        envelope = with_envelope("run", {}, machine=run.machine, machines=run_machines(run, cells))
        text = to_json(run, cells, envelope)
    else:
        from jitlab.interop.pyperf import pyperf_suite_from_run

        text = json.dumps(pyperf_suite_from_run(run, cells), indent=1)
    if output:
        try:
            Path(output).write_text(text)
        except OSError as exc:
            raise UserError(f"cannot write {output}: {exc.strerror}") from exc
    else:
        print(text, end="" if text.endswith("\n") else "\n")


@app.command("plot")
@click.argument("run_id")
@click.option("-o", "--output", default=None, help="PNG/SVG/PDF file (default: beside the store)")
@store_option
def plot_command(run_id: str, output: str | None, store_path: str | None) -> None:
    """Draw a run's figure: time and error against n per backend."""
    store = open_store(store_path)
    run = store.run(run_id)
    cells = store.cells(run.run_id)
    if not any(c.ok for c in cells):
        raise UserError(f"run {run.run_id} has no successful cells to plot")
    try:
        from jitlab.report.plot import save_run_plots  # matplotlib: only when drawing

        paths = save_run_plots(run, cells, Path(output) if output else None)
    except OSError as exc:
        raise UserError(f"cannot write the plot: {exc}") from exc
    for path in paths:
        console.print(f"plot: {path}")
