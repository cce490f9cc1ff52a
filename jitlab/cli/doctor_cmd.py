"""`jitlab doctor TARGET`: diagnose a PyTorch function (see docs/doctor.md).

Exit codes: 0 after a diagnosis (findings or not), 2 for bad input (one line) and when the user's
own code raises (its traceback, limited to the user's frames).
"""

from __future__ import annotations

import json

import click

from jitlab.cli.app import app, console, json_option


@app.command("doctor")
@click.argument("target")
@click.option(
    "--inputs",
    "inputs_spec",
    default=None,
    metavar="FUNC",
    help="function returning (args, kwargs) for TARGET: path.py:function, package.module:function, or a "
    "name in TARGET's module; a `scale` parameter lets the scaling check ask for twice the size",
)
@click.option(
    "--trace", "trace_path", default=None, metavar="FILE", help="write a profiler Chrome trace (JSON)"
)
@click.option(
    "--checks",
    default=None,
    metavar="NAMES",
    help="comma-separated check families to run (default: all): sync, loops, graph, regime",
)
@click.option("--refresh-peaks", is_flag=True, help="remeasure the machine peaks before the regime check")
@json_option
def doctor_command(
    target: str,
    inputs_spec: str | None,
    trace_path: str | None,
    checks: str | None,
    refresh_peaks: bool,
    as_json: bool,
) -> int:
    """Diagnose TARGET, a PyTorch function given as path.py:function or package.module:function:
    synchronisations, data-dependent shapes, blocking calls in loops, torch.compile graph breaks and
    recompilations, and whether it is overhead-, bandwidth- or compute-bound."""
    from jitlab.doctor import UserCodeFailed, diagnose
    from jitlab.doctor.report import diagnosis_json, print_diagnosis

    chosen = [name.strip() for name in checks.split(",") if name.strip()] if checks else None
    peaks = None
    if refresh_peaks and (chosen is None or "regime" in chosen):
        from jitlab.machine.peaks import load_peaks

        peaks = load_peaks(refresh=True)
    try:
        diagnosis = diagnose(target, inputs_spec, checks=chosen, peaks=peaks, trace=trace_path)
    except UserCodeFailed as failed:
        # click.echo, not rich: lines stay as Python wrote them however narrow the terminal
        click.echo(
            click.style("jitlab doctor: ", fg="red", bold=True) + f"{failed}; its traceback:", err=True
        )
        click.echo(failed.user_traceback(), err=True)
        return 2
    if as_json:
        click.echo(json.dumps(diagnosis_json(diagnosis), indent=2))
    else:
        print_diagnosis(diagnosis, console)
    return 0
