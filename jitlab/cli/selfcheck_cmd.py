"""`jitlab selfcheck`: validate the measuring harness on this machine and say what spoils it."""

from __future__ import annotations

import json

import click

from jitlab.cli.app import app, console, err_console, json_option, progress_bar
from jitlab.errors import UserError


@app.command("selfcheck")
@click.option(
    "--processes", type=int, default=3, show_default=True, metavar="N", help="worker processes per cell"
)
@click.option(
    "--budget", type=float, default=0.4, show_default=True, metavar="S", help="sampling seconds per cell"
)
@click.option(
    "--repeats",
    type=int,
    default=10,
    show_default=True,
    metavar="N",
    help="comparisons of identical runs, and of a 5% slower build",
)
@click.option(
    "--store", "store_path", default=None, metavar="PATH", help="keep the selfcheck's cells in this store"
)
@json_option
def selfcheck_command(
    processes: int, budget: float, repeats: int, store_path: str | None, as_json: bool
) -> int:
    """Check the harness on this machine in about a minute: busy-waits of known cost (1 µs, 100 µs,
    10 ms) measured within ±2%, identical runs never called different, a 5% slower build always
    called slower, the timer and jitlab's own overhead, and the machine state that spoils benchmarks
    (governor, turbo, load, busy processes, throttling, ASLR, isolated CPUs). Exit code 1 when a
    check fails."""
    if processes < 1 or repeats < 1 or budget <= 0:
        raise UserError("--processes and --repeats must be positive integers and --budget a positive number")
    from jitlab import formatting as fmt
    from jitlab.selfcheck import SelfcheckConfig, run_selfcheck
    from jitlab.selfcheck.report import print_report

    config = SelfcheckConfig(processes=processes, budget_s=budget, repeats=repeats)
    total = len(config.known_costs_s) + 2 * repeats + 1
    progress = progress_bar("selfcheck", err_console)
    task = progress.add_task("", total=total)

    def started(spec) -> None:
        progress.update(task, description=f"{spec.workload} {fmt.seconds(spec.size * 1e-9)}")

    with progress:
        report = run_selfcheck(config, store_path, started, lambda record: progress.advance(task))
    if as_json:
        print(json.dumps(report.to_json()))
    else:
        print_report(console, report)
    return 0 if report.passed else 1
