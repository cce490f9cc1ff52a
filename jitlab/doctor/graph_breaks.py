"""Graph breaks and recompilations under `torch.compile`, with TorchDynamo's reasons.

The target is compiled with a backend that only counts the graphs it is given and returns them
uncompiled (no C++ compiler runs), and called with the inputs twice, then with inputs twice the size
twice. Graph breaks are read from TorchDynamo's `graph_breaks` log artifact during the first call:
each record names the break's type and explanation and the user's traceback, so a finding points at
the line that broke the graph. (`torch._dynamo.explain` was tried first: it drops a break whose
preceding graph is empty, such as a `nonzero` on the function's first line.) Recompilations are
graphs compiled again after the first call: on a repeated call with the same inputs they mean a guard
fails every time; on the first call at a new size they are TorchDynamo specialising on the old shape.
Their reasons come from `torch._dynamo.utils.guard_failures`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from jitlab.doctor.findings import Finding
from jitlab.doctor.location import format_location, is_user_file
from jitlab.doctor.registry import register_check

if TYPE_CHECKING:
    from jitlab.doctor.context import DoctorContext

_WHERE = re.compile(r"Graph break in user code at (.+):(\d+)")
_FRAME = re.compile(r'File "(.+)", line (\d+)')


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else "unknown reason"


def break_suggestion(reason: str) -> str:
    text = reason.lower()
    if "dynamic shape operator" in text or "data dependent" in text or "data-dependent" in text:
        return (
            "use a static-shape equivalent (count_nonzero, torch.where, topk, gather), or set "
            "torch._dynamo.config.capture_dynamic_output_shape_ops = True"
        )
    if "item" in text or "scalar" in text:
        return "keep the value as a tensor, or set torch._dynamo.config.capture_scalar_outputs = True"
    if "print" in text or "logging" in text or "builtin" in text:
        return "move printing and logging out of the compiled function"
    return "restructure the code at this line so TorchDynamo can trace it, or compile the parts around it"


def parse_break(message: str) -> tuple[tuple[str, int] | None, str]:
    """(innermost user frame, reason) from one `graph_breaks` log message."""
    frames = [(f, int(n)) for f, n in _FRAME.findall(message.split("User code traceback:", 1)[-1])]
    user = [frame for frame in frames if is_user_file(frame[0])]
    where = _WHERE.search(message)
    location = user[-1] if user else ((where.group(1), int(where.group(2))) if where else None)
    lines = [
        line.strip() for line in message.split("Graph Break Reason:", 1)[-1].splitlines() if line.strip()
    ]
    # TorchDynamo writes each break as a title line followed by "Explanation: ..."
    first = next((i for i, line in enumerate(lines) if line.startswith("Explanation:")), None)
    if first is not None and first > 0:
        reason = f"{lines[first - 1]}: {lines[first][len('Explanation:') :].strip()}"
    else:
        reason = lines[0] if lines else _first_line(message)
    if "graph break in loop" in message and not reason.startswith("graph break in loop"):
        reason += " (inside a loop, so TorchDynamo skipped the whole function: it runs eagerly)"
    return location, reason


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.endswith("__graph_breaks"):
            self.messages.append(record.getMessage())


@contextmanager
def captured_graph_breaks() -> Iterator[_Capture]:
    """Turn on TorchDynamo's graph-break log and keep its records (off the user's terminal)."""
    import torch._logging

    capture = _Capture()
    torch._logging.set_logs(graph_breaks=True)
    # TorchDynamo's own warnings repeat what the findings say; keep them off the user's terminal
    dynamo_logger = logging.getLogger("torch._dynamo")
    dynamo_level = dynamo_logger.level
    dynamo_logger.setLevel(logging.ERROR)
    loggers = [
        logging.getLogger(name)
        for name in list(logging.Logger.manager.loggerDict)
        if name.startswith("torch.") and name.endswith("__graph_breaks")
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


def _guard_failures() -> list[str]:
    import torch._dynamo.utils

    reasons = []
    for failures in torch._dynamo.utils.guard_failures.values():
        for failure in failures:
            text = re.sub(r"^\d+/\d+:\s*", "", _first_line(failure)).split("#", 1)[0].strip()
            if text and text not in reasons:
                reasons.append(text)
    return reasons


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
                if label == "first call":
                    with captured_graph_breaks() as capture:
                        ctx.call_with(compiled, inputs, during=f"running under torch.compile ({label})")
                    for message in capture.messages:
                        frame, reason = parse_break(message)
                        where = format_location(*frame) if frame else _def_location(ctx)
                        if (where, reason) not in breaks:
                            breaks.add((where, reason))
                            findings.append(
                                Finding(
                                    "graph-break",
                                    where,
                                    f"torch.compile graph break: {reason}",
                                    break_suggestion(reason),
                                )
                            )
                else:
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
            if label == "first call" or compiles[label] == 0:
                continue
            reasons = "; ".join(_guard_failures()) or "no guard failure was recorded"
            if label == "inputs at twice the size":
                detail = (
                    f"recompiled {compiles[label]} graph(s) when the input size changed (guards failed: "
                    f"{reasons}); TorchDynamo first specialises on the sizes it sees"
                )
                suggestion = (
                    "expected once per new size pattern; to compile once for all sizes use "
                    "torch.compile(dynamic=True) or torch._dynamo.mark_dynamic on the varying dimension"
                )
            else:
                detail = f"recompiled {compiles[label]} graph(s) on the {label} (guards failed: {reasons})"
                suggestion = (
                    "a guard fails on every call: pass changing Python values (counters, floats, "
                    "globals) as tensors, or make them constant"
                )
            findings.append(Finding("recompile", _def_location(ctx), detail, suggestion))
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
