"""`jitlab compare RUN_A RUN_B`: which cells got significantly faster or slower from A to B."""

from __future__ import annotations

import json

import click

from jitlab.cli import exit_codes
from jitlab.cli.app import (
    app,
    cell_machines,
    console,
    err_console,
    json_option,
    store_option,
    with_envelope,
)
from jitlab.compare.gate import describe, regressions_in, undecided_in, undecided_note
from jitlab.compare.runs import MEASURES, compare_runs
from jitlab.compare.table import print_comparison
from jitlab.errors import UserError
from jitlab.stats.comparison import DEFAULT_ALPHA
from jitlab.store import Store


@app.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option(
    "--threshold",
    type=float,
    default=None,
    metavar="PCT",
    help="call a change only when its CI lies outside ±PCT % (instead of the cells' noise floors), "
    "and hide smaller changes",
)
@click.option(
    "--alpha", type=float, default=DEFAULT_ALPHA, show_default=True, help="significance level of the test"
)
@click.option(
    "--across-machines",
    is_flag=True,
    help="also compare cells measured on different machines (the change then mixes code and hardware)",
)
@click.option(
    "--fail-above",
    type=float,
    default=None,
    metavar="PCT",
    help="exit 1 if a cell of RUN_B is significantly slower than in RUN_A by more than PCT %",
)
@click.option(
    "--measure",
    type=click.Choice(MEASURES),
    default="auto",
    show_default=True,
    help="compare instruction counts (runs measured with --measure instructions), wall time, or "
    "auto: counts where both cells have them, else wall time",
)
@store_option
@json_option
def compare_command(
    run_a: str,
    run_b: str,
    threshold: float | None,
    alpha: float,
    across_machines: bool,
    fail_above: float | None,
    store_path: str | None,
    as_json: bool,
    measure: str,
) -> int:
    """Compare RUN_B against RUN_A (the baseline) cell by cell: ratio of medians with a 95% CI from
    the hierarchical bootstrap over worker processes, and a test; a change is called faster or slower
    only when significant and outside both cells' noise floors (or --threshold). With --fail-above
    PCT, exit 1 when a cell is called slower by more than PCT % (the gate of `jitlab run --baseline`,
    on two stored runs)."""
    if fail_above is not None and fail_above < 0:
        raise UserError(f"--fail-above {fail_above:g} is negative: give a percentage such as 5")
    store = Store(store_path, create=False)
    comparison = compare_runs(
        store,
        run_a,
        run_b,
        alpha=alpha,
        threshold_pct=threshold,
        across_machines=across_machines,
        measure=measure,
    )
    # the gate's own rule (jitlab.compare.gate), so `compare --fail-above` and `run --baseline` agree
    regressions = regressions_in(comparison, fail_above) if fail_above is not None else []
    several = comparison.several_machines
    if as_json:
        data = comparison.to_json()
        if fail_above is not None:
            data["gate"] = {
                "fail_above_pct": fail_above,
                "passed": not regressions,
                "regressions": [describe(c, several) for c in regressions],
                "undecided": [describe(c, several) for c in undecided_in(comparison)],
            }
        cells = store.cells(comparison.run_a.run_id) + store.cells(comparison.run_b.run_id)
        machines = cell_machines(cells) or [comparison.run_a.machine, comparison.run_b.machine]
        print(json.dumps(with_envelope("compare", data, machines=machines)))
    else:
        print_comparison(console, comparison)
    if fail_above is None:
        return exit_codes.OK
    baseline = comparison.run_a.run_id
    if not regressions:
        err_console.print(
            f"no cell is significantly slower than in run {baseline} by more than {fail_above:g}%"
            + undecided_note(comparison),
            highlight=False,
        )
        return exit_codes.OK
    exit_codes.report_failure(
        f"{len(regressions)} cell(s) significantly slower than in run {baseline} by more than {fail_above:g}%:"
    )
    for cell in regressions:
        click.echo(f"  {describe(cell, several)}", err=True)
    return exit_codes.CHECK_FAILED
