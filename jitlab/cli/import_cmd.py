"""`jitlab import FILE_OR_STORE`: merge runs from another store or an export file into this one."""

from __future__ import annotations

import json

import click

from jitlab.cli.app import app, console, json_option, store_option
from jitlab.store import Store


@app.command("import")
@click.argument("source", metavar="FILE_OR_STORE")
@store_option
@json_option
def import_command(source: str, store_path: str | None, as_json: bool) -> None:
    """Import the runs of FILE_OR_STORE (a store: SQLite file or postgresql:// URL; or a file written by
    `jitlab export RUN --format json`) into the store. A run already here (same UUID) is skipped."""
    from jitlab.store.importing import import_into

    store = Store(store_path)
    store.check_writable()
    report = import_into(store, source)
    if as_json:
        print(json.dumps(report.to_json()))
        return
    for run in report.imported:
        there = f" (run {run.source_id} there)" if run.source_id else ""
        console.print(
            f"imported run {run.uuid[:8]}{there} as run {run.local_id}: {run.target}, {run.cells} cells",
            highlight=False,
        )
    for run in report.skipped:
        there = f" (run {run.source_id} there)" if run.source_id else ""
        console.print(
            f"skipped run {run.uuid[:8]}{there}: already here as run {run.local_id}", highlight=False
        )
    console.print(
        f"{len(report.imported)} imported, {len(report.skipped)} skipped (already in {store.path})",
        highlight=False,
    )
