"""`jitlab capture --speed`: eager, jitlab.jit and torch.compile timed on each model, here or on
every node of a cluster, on the CPU or a GPU (`--device`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from jitlab.capture.corpus import Case
from jitlab.cli.app import console
from jitlab.cli.capture_kept import capture_json, collect_results
from jitlab.cli.exit_codes import report_failure
from jitlab.errors import UserError

if TYPE_CHECKING:
    from jitlab.engine.cluster import Cluster


def speed_command(
    paths: list[str],
    cases: list[Case],
    timeout: float | None,
    backend: str,
    budget: float,
    details: bool,
    as_json: bool,
    setup: Cluster | None = None,
    device: str = "cpu",
) -> int:
    """`jitlab capture --speed`: speed-up against eager and first-call time of jitlab.jit and torch.compile.
    On a cluster every node runs the models on the same `device` name (cuda: each node's first GPU)."""
    timeout = 120.0 if timeout is None else timeout
    if timeout <= 0 or budget <= 0:
        raise UserError(f"--timeout {timeout:g} and --budget {budget:g} must be positive numbers of seconds")
    from jitlab.capture.devices import described_in
    from jitlab.capture.speed import LABELS, METHODS, run_speed, to_json

    def run_cluster(on_result: Callable) -> dict:
        from jitlab.capture.distributed import run_on_cluster

        return run_on_cluster(
            setup, paths, cases, list(METHODS), timeout, worker="jitlab.capture.speed_worker",
            options={"backend": backend, "budget": budget, "device": device}, timed=not setup.share_cores,
            on_result=on_result,
        )  # fmt: skip

    by_machine, kept = collect_results(
        f"speed ({backend}{'' if device == 'cpu' else ', ' + device})", cases, list(METHODS), setup,
        lambda on_result: run_speed(paths, cases, backend, budget, timeout, on_result=on_result, device=device),
        run_cluster, label=LABELS.get,
    )  # fmt: skip
    make = kept.report(
        cases,
        list(METHODS),
        lambda done, results: to_json(paths, done, results, backend, budget, described_in(results, device)),
    )
    if as_json:
        click.echo(json.dumps(capture_json("capture-speed", by_machine, make, setup), indent=1))
        return _device_exit_code(by_machine, device) or kept.exit_code(cases, list(METHODS))
    for machine, results in sorted(by_machine.items()):
        if machine:
            console.print(f"[bold]on {machine}[/]", highlight=False)
        if device != "cpu":
            console.print(f"models on {described_in(results, device)}", highlight=False)
        _print_speed(kept.finished(cases, list(METHODS), results), results, backend, details)
    return _device_exit_code(by_machine, device) or kept.exit_code(cases, list(METHODS))


def _device_exit_code(by_machine: dict[str, dict], device: str) -> int:
    """1, with a line on stderr naming them, when machines of a cluster could not use `device` (their
    workers checked it: the head need not have a GPU); 0 otherwise."""
    unusable = sorted(
        machine or "this machine"
        for machine, results in by_machine.items()
        if any(result.get("device_unusable") for result in results.values())
    )
    if not unusable:
        return 0
    report_failure(f"--device {device}: not usable on {', '.join(unusable)}; their cases are marked failed")
    return 1


def _print_speed(cases: list[Case], results: dict, backend: str, details: bool) -> None:
    from jitlab.capture.speed import LABELS, cases_table, left_out, totals_table

    if details:
        console.print(cases_table(cases, results))
    excluded = left_out(cases, results)
    if excluded:
        names = sorted({row["case"] for row in excluded})
        console.print(f"{len(names)} case(s) left out of the geometric means:", highlight=False)
        for row in excluded:
            console.print(
                f"  {row['case']} · {LABELS[row['method']]}: {row['reason']}", highlight=False, markup=False
            )
    console.print(totals_table(cases, results, backend))
    console.print(
        "first call = wrapping + capture + compile + run, each compiled method with a fresh empty Inductor cache",
        style="dim",
        highlight=False,
    )
