"""The exit codes of every `jitlab` command, in one place (docs/automation.md has the table for users).

CI systems read nothing but the exit code, so each code means one thing across commands:
0 the command did what was asked and every requested check passed; 1 a check the user asked for
failed (a regression gate, `--strict`, `--fail-on`), or a run measured nothing at all; 2 bad input
(one line on stderr says what to fix); 3 a bug in jitlab (its traceback follows); 4 the store
could not be reached (a database server down for longer than `--store-retry`): the input was fine,
what was written is kept, and the same command (`jitlab run --resume RUN_ID`) finishes the job once
the server is back; 130 interrupted.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from jitlab.store import CellRecord

OK = 0
CHECK_FAILED = 1
BAD_INPUT = 2
INTERNAL_ERROR = 3
STORE_UNREACHABLE = 4
INTERRUPTED = 130

#: statuses of a cell that tried to run and did not produce a measurement
BROKEN = ("failed", "timeout", "inconsistent")


def run_verdict(cells: Sequence[CellRecord], strict: bool, requested_backends: Sequence[str]) -> str | None:
    """Why `jitlab run` must exit 1, or None when it may exit 0.

    Without `--strict`, a run fails only when it measured nothing: every cell failed, timed out or
    was unavailable. A CI job that "passes" with no figure at all hides a broken environment.
    With `--strict`, any failed or timed-out cell fails the run, and so does an unavailable cell of
    a backend named in `--backends` (the user asked for it); unavailable cells of the default
    backend list (every backend the workload implements) do not, since no machine has all of them.
    """
    if not cells:
        return None
    if not any(c.ok for c in cells):
        counts: dict[str, int] = {}
        for cell in cells:
            counts[cell.status] = counts.get(cell.status, 0) + 1
        summary = ", ".join(f"{n} {status}" for status, n in counts.items())
        return f"no cell was measured ({summary})"
    if not strict:
        return None
    broken = [c for c in cells if c.status in BROKEN]
    missing = [c for c in cells if c.status == "unavailable" and c.backend in requested_backends]
    if not broken and not missing:
        return None
    parts = []
    if broken:
        parts.append(f"{len(broken)} cell(s) failed or timed out")
    if missing:
        names = ", ".join(sorted({c.backend for c in missing}))
        parts.append(f"{len(missing)} cell(s) of requested backends unavailable ({names})")
    return "--strict: " + " and ".join(parts)


def report_failure(message: str) -> None:
    """The line that explains an exit code 1, on stderr, unwrapped however narrow the terminal."""
    click.echo(click.style(message, fg="red", bold=True), err=True)
