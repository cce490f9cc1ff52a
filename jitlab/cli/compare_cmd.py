"""`jitlab compare RUN_A RUN_B`: which cells got significantly faster or slower from A to B."""

from __future__ import annotations

import json

import click

from jitlab.cli.app import app, console, json_option, store_option
from jitlab.compare.runs import compare_runs
from jitlab.compare.stats import DEFAULT_ALPHA
from jitlab.compare.table import print_comparison
from jitlab.store import Store


@app.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option(
    "--threshold",
    type=float,
    default=0.0,
    show_default=True,
    metavar="PCT",
    help="hide changes smaller than PCT %",
)
@click.option(
    "--alpha", type=float, default=DEFAULT_ALPHA, show_default=True, help="significance level of the U test"
)
@click.option(
    "--across-machines",
    is_flag=True,
    help="also compare cells measured on different machines (the change then mixes code and hardware)",
)
@store_option
@json_option
def compare_command(
    run_a: str,
    run_b: str,
    threshold: float,
    alpha: float,
    across_machines: bool,
    store_path: str | None,
    as_json: bool,
) -> None:
    """Compare RUN_B against RUN_A (the baseline) cell by cell: ratio of medians with a 95% bootstrap
    CI and a Mann-Whitney U test; only significant changes are called faster or slower."""
    store = Store(store_path, create=False)
    comparison = compare_runs(
        store, run_a, run_b, alpha=alpha, threshold_pct=threshold, across_machines=across_machines
    )
    if as_json:
        print(json.dumps(comparison.to_json()))
        return
    print_comparison(console, comparison)
