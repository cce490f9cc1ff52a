"""The terminal view of a selfcheck: one line per check with its verdict, the advice below it."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from jitlab.selfcheck import SelfcheckReport
from jitlab.selfcheck.harness import TRUST_UNDER_LOAD

VERDICT_STYLE = {"pass": "bold green", "warn": "bold yellow", "fail": "bold red", "unknown": "dim"}


def print_report(console: Console, report: SelfcheckReport) -> None:
    for kind, title in (("harness", "measurements through the engine"), ("machine", "machine state")):
        table = Table(title=f"selfcheck: {title}", title_justify="left", show_lines=False)
        table.add_column("check", no_wrap=True)
        table.add_column("verdict", no_wrap=True)
        table.add_column("result", overflow="fold")
        for check in (c for c in report.checks if c.kind == kind):
            result = Text(check.summary)
            if check.advice:
                result.append(f"\n→ {check.advice}", style="dim")
            table.add_row(check.name, Text(check.verdict, style=VERDICT_STYLE.get(check.verdict, "")), result)
        console.print(table)
    failed = [c.name for c in report.checks if c.verdict == "fail"]
    busy = next((c for c in report.checks if c.name == "load while measuring" and c.verdict == "warn"), None)
    if busy is not None:
        line = Text(
            f"selfcheck {'failed: ' + ', '.join(failed) if failed else 'passed'}, on a busy machine ({busy.summary}): "
            f"{TRUST_UNDER_LOAD}",
            style="bold yellow",
        )
    elif failed:
        line = Text(f"selfcheck failed: {', '.join(failed)}", style="bold red")
    else:
        line = Text("selfcheck passed: this machine's measurements can be trusted", style="bold green")
    line.append(
        f"  ({report.duration_s:.0f} s, {report.config.processes} processes per cell, machine {report.machine})",
        style="dim",
    )
    console.print(line)
