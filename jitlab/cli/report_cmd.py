"""`jitlab report RUN_ID [RUN_ID...] -o DIR`: a static, self-contained HTML report of stored runs."""

from __future__ import annotations

import click

from jitlab.cli.app import app, console, store_option
from jitlab.store import Store


@app.command("report")
@click.argument("run_ids", nargs=-1, required=True)
@click.option(
    "-o", "--output", "out_dir", required=True, metavar="DIR", help="folder to write index.html into"
)
@store_option
def report_command(run_ids: tuple[str, ...], out_dir: str, store_path: str | None) -> None:
    """Write an HTML report of RUN_IDs: machine and versions, plots and tables per workload, unstable
    and failed cells, and, for several runs, each one compared with the first."""
    store = Store(store_path, create=False)
    from jitlab.report.html import write_report  # matplotlib and jinja2: only for this command

    path = write_report(store, [store.resolve_run(r) for r in run_ids], out_dir)
    console.print(f"report: {path}")
