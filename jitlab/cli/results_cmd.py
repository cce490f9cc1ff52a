"""Reading stored runs back: `jitlab runs`, `show`, `export`, `plot`."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from jitlab.cli.app import app, console, json_option, store_option
from jitlab.errors import UserError
from jitlab.report.export import run_json, to_csv, to_json
from jitlab.report.table import print_run
from jitlab.store import Store


def open_store(path: str | None) -> Store:
    return Store(path, create=False)


def machines_text(run, cells) -> str:
    """The run's machine, or the names of the machines its cells were measured on."""
    from jitlab.store.identity import machine_labels

    labels = machine_labels(c.machine for c in cells)
    if len(labels) > 1:
        return f"{len(labels)} machines: " + ", ".join(labels)
    return f"{run.machine.get('cpu', '?')} ×{run.machine.get('cores_logical', '?')}"


@app.command("runs")
@store_option
def runs_command(store_path: str | None) -> None:
    """List the stored runs."""
    store = open_store(store_path)
    table = Table(title=f"runs in {store.path}", title_justify="left")
    for column in ("run", "uuid", "started", "status", "target", "cells", "ok", "machine", "commit"):
        table.add_column(column)
    for run in store.runs():
        cells = store.cells(run.run_id)
        table.add_row(
            str(run.run_id),
            run.uuid[:8],
            run.created_at,
            run.status,
            run.target,
            str(len(cells)),
            str(sum(c.ok for c in cells)),
            machines_text(run, cells),
            (run.machine.get("project_commit") or "-")[:12],
        )
    console.print(table)


@app.command("show")
@click.argument("run_id")
@store_option
@json_option
def show_command(run_id: str, store_path: str | None, as_json: bool) -> None:
    """Show a stored run's table (or JSON)."""
    store = open_store(store_path)
    run = store.run(run_id)
    cells = store.cells(run.run_id)
    if as_json:
        print(json.dumps(run_json(run, cells)))
        return
    m = run.machine
    console.print(
        f"run {run.run_id} ({run.uuid[:8]}) · {run.status} · {run.created_at} · {m.get('cpu')} ({m.get('cores_logical')} threads) · "
        f"Python {m.get('python')} · threads {run.options.get('threads')}"
    )
    print_run(console, run, cells)


@app.command("export")
@click.argument("run_id")
@click.option(
    "--format", "format", default="csv", show_default=True, help="csv or json (json carries raw samples)"
)
@click.option("-o", "--output", default=None, help="file to write (default: stdout)")
@store_option
def export_command(run_id: str, format: str, output: str | None, store_path: str | None) -> None:
    """Export a run's cells as CSV or JSON."""
    if format not in ("csv", "json"):
        raise UserError(f"--format {format!r} is not supported: use csv or json")
    store = open_store(store_path)
    run = store.run(run_id)
    cells = store.cells(run.run_id)
    text = to_csv(cells) if format == "csv" else to_json(run, cells)
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
