"""`jitlab import SOURCE...`: bring runs measured elsewhere into the store: other stores, jitlab's
JSON exports and pyperf files (recognised by content: `jitlab.interop.importing`). A run already
here (the same UUID) is skipped, so importing twice imports once."""

from __future__ import annotations

import json

import click

from jitlab.cli.app import (
    app,
    console,
    json_option,
    say_store_waits,
    store_option,
    store_retry_option,
    with_envelope,
)
from jitlab.store import Store


@app.command("import")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@click.option(
    "--machine",
    "machine_name",
    default=None,
    metavar="NAME",
    help="name the machine pyperf files' results were measured on (for compare and history)",
)
@store_option
@store_retry_option
@json_option
def import_command(
    sources: tuple[str, ...],
    machine_name: str | None,
    store_path: str | None,
    store_retry: float,
    as_json: bool,
) -> None:
    """Import the runs of each SOURCE into the store: a jitlab store (SQLite file or postgresql://
    URL), a file written by `jitlab export RUN --format json`, or a pyperf JSON suite (e.g. from
    `python -m pyperf timeit -o FILE`; .json.gz too), one run per pyperf file. A run already here
    (same UUID; for pyperf files, the same content) is skipped. Each run is written in one
    transaction; a store server that goes away is waited for (--store-retry), and importing again
    after it stayed away imports what is missing."""
    from jitlab.interop.importing import identify, import_sources

    recognised = [identify(s, machine_name) for s in dict.fromkeys(sources)]  # all checked first
    store = Store(store_path, retry_s=store_retry, on_wait=say_store_waits)
    store.check_writable()
    report = import_sources(store, recognised)
    if as_json:
        from jitlab.report.envelope import run_machines

        machines = []
        for entry in report.imported:
            run = store.run(entry.local_id)
            machines += run_machines(run, store.cells(run.run_id)) or [run.machine]
        print(json.dumps(with_envelope("import", report.to_json(), machines=machines)))
        return
    for run in report.imported:
        there = f" (run {run.source_id} there)" if run.source_id else ""
        console.print(
            f"{run.source}: imported {run.format} run {run.uuid[:8]}{there} as run {run.local_id}: "
            f"{run.target}, {run.cells} cells",
            highlight=False,
        )
    for run in report.skipped:
        there = f" (run {run.source_id} there)" if run.source_id else ""
        console.print(
            f"{run.source}: skipped {run.format} run {run.uuid[:8]}{there}: already here as run {run.local_id}",
            highlight=False,
        )
    console.print(
        f"{len(report.imported)} imported, {len(report.skipped)} skipped (already in {store.path})",
        highlight=False,
    )
