"""Blocking calls inside loops: the asynchronous-execution lesson.

A framework that dispatches asynchronously overlaps the host's Python with the device's work; a
blocking call (any synchronisation found by `sync.py`) inside a loop drains that queue on every
iteration, so N iterations cost N x (host + device + transfer) instead of about N x device. A
synchronisation is "in a loop" when one of the user's frames that led to it is a line inside the body
of a `for`/`while` loop (read from the file's syntax tree), or when it happened at least
`REPEATS` times from the same line in one call (recursion, callbacks).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from jitlab.doctor.findings import Finding
from jitlab.doctor.location import format_location, loop_header
from jitlab.doctor.registry import register_check
from jitlab.doctor.sync import describe

if TYPE_CHECKING:
    from jitlab.doctor.context import DoctorContext

REPEATS = 8

SUGGESTION = (
    "move the synchronisation out of the loop: keep per-iteration values in a tensor (or a list of "
    "tensors) and read them once after the loop, batch the iterations into one tensor operation, or "
    "decide on the device with torch.where"
)


@register_check("loops")
def check_loops(ctx: DoctorContext) -> list[Finding]:
    events = ctx.sync_events()
    counts = Counter((event.location, event.op) for event in events)
    findings: list[Finding] = []
    reported: set[tuple[str, str]] = set()
    for event in events:
        key = (event.location, event.op)
        if key in reported:
            continue
        loop = next(
            ((f, header) for f, line in event.frames if (header := loop_header(f, line)) is not None), None
        )
        times = counts[key]
        if loop is None and times < REPEATS:
            continue
        reported.add(key)
        what = describe(event)[0].split(":")[0]
        where = f"inside the loop at {format_location(*loop)}" if loop else "from the same line"
        findings.append(
            Finding(
                "blocking-in-loop",
                event.location,
                f"{what} ran {times} time{'s' if times != 1 else ''} in one call, {where}: each one "
                "waits for the device, so queued work cannot overlap with Python",
                SUGGESTION,
                count=times,
            )
        )
    return findings
