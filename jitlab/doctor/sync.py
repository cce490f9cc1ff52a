"""The `sync` check: host-device synchronisations and data-dependent output shapes as findings.

The events come from watching one call (sync_watch.py, through `DoctorContext.sync_events`); on CUDA
they are confirmed with `torch.cuda.set_sync_debug_mode("warn")` and the profiler
(`jitlab.doctor.cuda_confirm`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from jitlab.doctor.findings import Finding
from jitlab.doctor.location import format_location
from jitlab.doctor.registry import register_check
from jitlab.doctor.sync_watch import SHAPE, SYNC, SyncEvent, SyncMonitor, describe

if TYPE_CHECKING:
    from jitlab.doctor.context import DoctorContext

__all__ = ["SyncEvent", "SyncMonitor", "check_sync", "describe", "sync_finding", "unexplained_syncs"]


def _calls_text(calls: Any) -> str:
    return ", ".join(f"{name} x{count}" for name, count in sorted(calls.items()))


def sync_finding(event: SyncEvent, profiled: dict[tuple[str, int, str], Any] | None = None) -> Finding:
    """The `sync` finding for any event: data-dependent shapes make the host wait for the size too.
    `profiled`: blocking CUDA calls per user function seen by the profiler (CUDA only)."""
    detail, suggestion = describe(event)
    if event.kind == SHAPE:  # the shape finding names the operator; this one says what it costs
        detail = "the host must wait for the device to learn the output size"
    if event.confirmed:
        detail += " (confirmed on CUDA by torch.cuda.set_sync_debug_mode)"
    elif event.confirmed is None:
        detail += " (a GPU would wait here; intercepted on the CPU)"
    else:
        detail += " (not flagged by CUDA's sync debug mode here: the data may already be on the host)"
    if profiled and event.functions:
        file, first_line, name = event.functions[0]
        calls = profiled.get((os.path.basename(file), first_line, name))
        if calls:
            detail += f"; the profiler saw {_calls_text(calls)} in {name}()"
    return Finding(SYNC, event.location, detail, suggestion)


def unexplained_syncs(
    events: list[SyncEvent], profiled: dict[tuple[str, int, str], Any], files: dict[str, str]
) -> list[Finding]:
    """Findings for user functions in which the profiler saw blocking CUDA calls but no intercepted
    operation happened (an operator that synchronises internally, unknown to the doctor).
    `files` maps the basenames the profiler gives to the user's full paths."""
    seen = {(os.path.basename(f), line, name) for e in events for (f, line, name) in e.functions[:1]}
    findings = []
    for function, calls in profiled.items():
        if function in seen:
            continue
        basename, first_line, name = function
        findings.append(
            Finding(
                SYNC,
                format_location(files.get(basename, basename), first_line),
                f"the profiler saw the host wait for the device in {name}() ({_calls_text(calls)}), "
                "at an operation the doctor does not intercept",
                "find the operator with --trace (ui.perfetto.dev shows what runs before each wait), "
                "then keep its result on the device",
            )
        )
    return findings


@register_check("sync")
def check_sync(ctx: DoctorContext) -> list[Finding]:
    """A `sync` finding for every host read, and a `data-dependent-shape` finding for shape ops.
    On CUDA, the profiler's blocking calls confirm them and reveal the ones not intercepted."""
    findings: list[Finding] = []
    events = ctx.sync_events()
    profiled = ctx.profiled_syncs()
    for event in events:
        findings.append(sync_finding(event, profiled))
        if event.kind == SHAPE:
            detail, suggestion = describe(event)
            findings.append(Finding(SHAPE, event.location, detail, suggestion))
    if profiled:
        files = {os.path.basename(f): f for e in events for f, _ in e.frames}
        if ctx.target.file:
            files.setdefault(os.path.basename(ctx.target.file), ctx.target.file)
        findings.extend(unexplained_syncs(events, profiled, files))
    return findings
