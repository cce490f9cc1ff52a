"""Graph breaks and recompilations under `torch.compile`, with TorchDynamo's reasons.

The target is compiled with a backend that only counts the graphs it is given and returns them
uncompiled (no C++ compiler runs), and called with the inputs twice, then with inputs twice the size
twice. Graph breaks are read from TorchDynamo's `graph_breaks` log artifact during the first call:
each record names the break's type and explanation and the user's traceback, so a finding points at
the line that broke the graph. (`torch._dynamo.explain` was tried first: it drops a break whose
preceding graph is empty, such as a `nonzero` on the function's first line.) Recompilations are
graphs compiled again after the first call: on a repeated call with the same inputs they mean a guard
fails every time; on the first call at a new size they are TorchDynamo specialising on the old shape.
Their reasons come from `torch._dynamo.utils.guard_failures` and the `recompiles` log; graphs compiled
later with no failed guard are new code reached (a branch, state made by the first call), and said so.
What each break is about is named in the user's terms by `break_causes.py`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from jitlab.doctor.break_causes import DynamoBreak, name_cause
from jitlab.doctor.findings import Finding
from jitlab.doctor.location import format_location
from jitlab.doctor.registry import register_check

if TYPE_CHECKING:
    from jitlab.doctor.context import DoctorContext

# "Graph break in user code at F:N", or "Graph break (user stack suppressed ...) in user code at F:N"
_WHERE = re.compile(r"Graph break(?: \([^)]*\))? in user code at (.+):(\d+)")
_FRAME = re.compile(r'File "(.+)", line (\d+), in (\S+)')


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else "unknown reason"


def parse_break(message: str) -> DynamoBreak:
    """One `graph_breaks` log message: its title, explanation, traceback and place."""
    frames = tuple(
        (f, int(n), fn) for f, n, fn in _FRAME.findall(message.split("User code traceback:", 1)[-1])
    )
    where = _WHERE.search(message)
    lines = [
        line.strip() for line in message.split("Graph Break Reason:", 1)[-1].splitlines() if line.strip()
    ]
    # TorchDynamo writes each break as a title line followed by "Explanation: ..."
    first = next((i for i, line in enumerate(lines) if line.startswith("Explanation:")), None)
    if first is not None and first > 0:
        title, explanation = lines[first - 1], lines[first][len("Explanation:") :].strip()
    else:
        title, explanation = (lines[0] if lines else _first_line(message)), ""
    if "graph break in loop" in message and "graph break in loop" not in title:
        explanation += " (inside a loop, so TorchDynamo skipped the whole function: it runs eagerly)"
    return DynamoBreak(
        title=title,
        explanation=explanation.strip(),
        frames=frames,
        reported_at=(where.group(1), int(where.group(2))) if where else None,
        duplicate="user stack suppressed" in message.split("\n", 1)[0],
    )


class _Capture(logging.Handler):
    """Keeps the messages of TorchDynamo's `graph_breaks` and `recompiles` log artifacts."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self.recompiles: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.endswith("__graph_breaks"):
            self.messages.append(record.getMessage())
        elif record.name.endswith("__recompiles"):
            self.recompiles.append(record.getMessage())


@contextmanager
def captured_graph_breaks() -> Iterator[_Capture]:
    """Turn on TorchDynamo's graph-break and recompile logs and keep their records (off the user's
    terminal)."""
    import torch._logging

    capture = _Capture()
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    # TorchDynamo's own warnings repeat what the findings say; keep them off the user's terminal
    dynamo_logger = logging.getLogger("torch._dynamo")
    dynamo_level = dynamo_logger.level
    dynamo_logger.setLevel(logging.ERROR)
    loggers = [
        logging.getLogger(name)
        for name in list(logging.Logger.manager.loggerDict)
        if name.startswith("torch.") and name.endswith(("__graph_breaks", "__recompiles"))
    ]
    saved = [(logger, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(capture)
        logger.propagate = False
    try:
        yield capture
    finally:
        for logger, propagate in saved:
            logger.removeHandler(capture)
            logger.propagate = propagate
        torch._logging.set_logs()
        dynamo_logger.setLevel(dynamo_level)


def _def_location(ctx: DoctorContext) -> str:
    code = getattr(ctx.target.function, "__code__", None)
    return format_location(code.co_filename, code.co_firstlineno) if code else ctx.target.spec


_FAILURE_LINE = re.compile(r"^\s*-?\s*\d+/\d+:\s*(.+)$")


def _guard_failures(recompile_messages: list[str]) -> list[str]:
    """The guards that failed, from torch._dynamo.utils.guard_failures and from the `recompiles`
    log (`- 0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8`)."""
    import torch._dynamo.utils

    texts = []
    for failures in torch._dynamo.utils.guard_failures.values():
        texts += [_first_line(failure) for failure in failures]
    for message in recompile_messages:
        texts += [line for line in message.splitlines() if _FAILURE_LINE.match(line)]
    reasons: list[str] = []
    for text in texts:
        match = _FAILURE_LINE.match(text)
        reason = (match.group(1) if match else text).split("#", 1)[0].strip()
        if reason and reason not in reasons:
            reasons.append(reason)
    return reasons


def _break_findings(messages: list[str], ctx: DoctorContext, seen: set[tuple[str, str]]) -> list[Finding]:
    """One `graph-break` finding per (line, reason) of the first call's `graph_breaks` log."""
    findings = []
    places: set[tuple[str, int]] = set()
    for message in messages:
        brk = parse_break(message)
        if brk.duplicate and brk.reported_at in places:
            continue  # TorchDynamo logged this break before, with its traceback
        if brk.reported_at is not None:
            places.add(brk.reported_at)
        frame = brk.user_frame
        where = format_location(*frame) if frame else _def_location(ctx)
        if (where, brk.reason) in seen:
            continue
        seen.add((where, brk.reason))
        detail, suggestion = name_cause(brk)
        findings.append(Finding("graph-break", where, detail, suggestion))
    return findings


def _recompile_finding(label: str, count: int, reasons: list[str], ctx: DoctorContext) -> Finding:
    """What the graphs compiled after the first call mean; no failed guard is never called one."""
    graphs = f"{count} graph{'s' if count != 1 else ''}"
    failed = "; ".join(reasons)
    if label == "inputs at twice the size":
        why = f" (guards failed: {failed})" if reasons else ""
        return Finding(
            "recompile",
            _def_location(ctx),
            f"recompiled {graphs} when the input size changed{why}: TorchDynamo first specialises on the "
            "sizes it sees",
            "expected once per new size pattern; to compile once for all sizes use "
            "torch.compile(dynamic=True) or torch._dynamo.mark_dynamic on the varying dimension",
        )
    if reasons:
        return Finding(
            "recompile",
            _def_location(ctx),
            f"recompiled {graphs} on the {label} (guards failed: {failed})",
            "a guard fails on every call: pass changing Python values (counters, floats, globals) as "
            "tensors, or make them constant",
        )
    return Finding(
        "recompile",
        _def_location(ctx),
        f"compiled {graphs} more on the {label}, with no failed guard: code the first call did not "
        "compile ran now (a branch taken only now, or state the first call created)",
        "call the function a few times before timing it; if graphs keep coming on later calls, look "
        "for state that changes between calls",
    )


def compile_findings(ctx: DoctorContext) -> tuple[list[Finding], dict[str, Any]]:
    import torch
    import torch._dynamo
    import torch._dynamo.utils

    torch._dynamo.reset()
    compiled_graphs = 0

    def counting_backend(graph_module: Any, example_inputs: Any) -> Any:
        nonlocal compiled_graphs
        compiled_graphs += 1
        return graph_module.forward

    compiled = torch.compile(ctx.target.function, backend=counting_backend)
    scaled, _ = ctx.scaled_inputs()
    calls = [("first call", ctx.inputs), ("same inputs again", ctx.inputs)]
    if scaled is not None:
        calls += [("inputs at twice the size", scaled), ("twice the size again", scaled)]
    compiles: dict[str, int] = {}
    findings: list[Finding] = []
    breaks: set[tuple[str, str]] = set()
    try:
        for label, inputs in calls:
            before = compiled_graphs
            torch._dynamo.utils.guard_failures.clear()
            try:
                with captured_graph_breaks() as capture:
                    ctx.call_with(compiled, inputs, during=f"running under torch.compile ({label})")
            except Exception as exc:  # TorchDynamo (or the code under it) failed: report, do not hide
                cause = getattr(exc, "exc", exc)
                findings.append(
                    Finding(
                        "compile-error",
                        _def_location(ctx),
                        f"torch.compile failed on the {label}: {type(cause).__name__}: {_first_line(str(cause))}",
                        "run torch.compile on the function yourself to see the full error",
                    )
                )
                break
            compiles[label] = compiled_graphs - before
            if label == "first call":
                findings += _break_findings(capture.messages, ctx, breaks)
            elif compiles[label]:
                findings.append(
                    _recompile_finding(label, compiles[label], _guard_failures(capture.recompiles), ctx)
                )
    finally:
        torch._dynamo.reset()
    summary = {
        "graph_count": compiles.get("first call"),
        "graph_break_count": len(breaks),
        "compiled_graphs": compiles,
    }
    return findings, summary


@register_check("graph")
def check_graph(ctx: DoctorContext) -> list[Finding]:
    findings, summary = compile_findings(ctx)
    ctx._cache["graph_summary"] = summary
    return findings
