"""`jitlab doctor TARGET`: diagnose a PyTorch function (see docs/doctor.md).

Exit codes: 0 after a diagnosis (findings or not), 1 with `--fail-on LEVEL` when a finding is at
that level or above (or of a kind named there), 2 for bad input (one line) and when the user's own
code raises (its traceback, limited to the user's frames).
"""

from __future__ import annotations

import json

import click

from jitlab.cli import exit_codes
from jitlab.cli.app import app, console, current_machine, json_option, with_envelope
from jitlab.doctor.findings import KINDS
from jitlab.doctor.severity import LEVELS, at_least, severity
from jitlab.errors import UserError


def parse_fail_on(text: str | None) -> tuple[str | None, set[str]]:
    """`--fail-on`: a level (info, warning, error) or comma-separated finding kinds."""
    if text is None:
        return None, set()
    names = [n.strip() for n in text.split(",") if n.strip()]
    if len(names) == 1 and names[0] in LEVELS:
        return names[0], set()
    unknown = [n for n in names if n not in KINDS]
    if unknown or not names:
        raise UserError(
            f"--fail-on {text!r}: give a level ({', '.join(LEVELS)}) or finding kinds ({', '.join(KINDS)})"
        )
    return None, set(names)


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
    help="comma-separated check families to run (default: all): sync, loops, graph, jit, regime",
)
@click.option("--refresh-peaks", is_flag=True, help="remeasure the machine peaks before the regime check")
@click.option(
    "--fail-on",
    default=None,
    metavar="LEVEL",
    help="exit 1 if a finding is at LEVEL or above (info, warning, error) or of a kind listed "
    "(e.g. graph-break,recompile)",
)
@json_option
def doctor_command(
    target: str,
    inputs_spec: str | None,
    trace_path: str | None,
    checks: str | None,
    refresh_peaks: bool,
    fail_on: str | None,
    as_json: bool,
) -> int:
    """Diagnose TARGET, a PyTorch function given as path.py:function or package.module:function:
    synchronisations, data-dependent shapes, blocking calls in loops, torch.compile graph breaks and
    recompilations, and whether it is overhead-, bandwidth- or compute-bound."""
    from jitlab.doctor import UserCodeFailed, diagnose
    from jitlab.doctor.report import diagnosis_json, print_diagnosis

    level, kinds = parse_fail_on(fail_on)
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
    failing = [
        f
        for f in diagnosis.findings
        if (level is not None and at_least(f.kind, level)) or kinds & set(f.kinds)
    ]
    if as_json:
        data = diagnosis_json(diagnosis)
        for entry in data["findings"]:
            entry["severity"] = severity(entry["kind"])
        if fail_on is not None:
            data["gate"] = {"fail_on": fail_on, "passed": not failing, "failing": len(failing)}
        click.echo(json.dumps(with_envelope("doctor", data, machine=current_machine()), indent=2))
    else:
        print_diagnosis(diagnosis, console)
    if failing:
        kinds_found = ", ".join(sorted({k for f in failing for k in f.kinds if not kinds or k in kinds}))
        exit_codes.report_failure(
            f"--fail-on {fail_on}: {len(failing)} finding(s) ({kinds_found}): exit code 1"
        )
        return exit_codes.CHECK_FAILED
    return exit_codes.OK
