"""The `jit` check: what jitlab.jit makes of the function, from its structured reasons.

The target runs through `jitlab.jit` with a backend that runs each captured graph as it is (no
compile time; jitlab.jit's own "eager" backend keeps data-dependent values inside the graph, where a
compiler would make it specialise on them) on the calls the `graph` check makes: the inputs twice, then inputs twice the size twice. Each
`jitlab.jit.reasons.Reason` with a place (a fallback's problems one by one, every graph break)
becomes a `jit-break` finding at its line, with the reason's kind, message and hint, so that the
grouped report shows it beside torch.compile's view of the same line. Specialisations on data values
have no line of their own; they are counted in the summary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jitlab.doctor.context import UserCodeFailed
from jitlab.doctor.findings import Finding
from jitlab.doctor.location import format_location, is_user_file
from jitlab.doctor.registry import register_check
from jitlab.errors import UserError

if TYPE_CHECKING:
    from jitlab.doctor.context import DoctorContext
    from jitlab.jit.reasons import Reason


def run_graph_as_is(graph_module: Any, example_inputs: Any) -> Any:
    """A jitlab.jit backend: the captured graph is what runs; jitlab.jit captures as for a compiler."""
    return graph_module.forward


def _place(where: str) -> str | None:
    """The doctor's `file:line` for a reason's `file:line`."""
    file, _, line = where.rpartition(":")
    return format_location(file, int(line)) if file and line.isdigit() else None


def reason_finding(reason: Reason) -> Finding | None:
    """A `jit-break` finding for one reason with a place, else None."""
    place = _place(reason.where) if reason.where else None
    if place is None or not is_user_file(reason.where.rpartition(":")[0]):
        return None
    what = {"fallback": "falls back to eager", "graph break": "splits the graph"}.get(
        reason.what, reason.what
    )
    return Finding("jit-break", place, f"{what} [{reason.kind.value}]: {reason.message}", reason.hint)


def jit_findings(ctx: DoctorContext) -> tuple[list[Finding], dict[str, Any]]:
    """The findings and a summary (captures, misses, entries, breaks, fallbacks, specialisations)."""
    import jitlab.jit

    try:
        fast = jitlab.jit.jit(ctx.target.function, backend=run_graph_as_is)
    except UserError as exc:  # e.g. a Python jitlab.jit does not run on, or not a function
        return [], {"unavailable": str(exc)}
    scaled, _ = ctx.scaled_inputs()
    calls = [("first call", ctx.inputs), ("same inputs again", ctx.inputs)]
    if scaled is not None:
        calls += [("inputs at twice the size", scaled), ("twice the size again", scaled)]
    for label, inputs in calls:
        try:
            ctx.call_with(fast, inputs, during=f"running under jitlab.jit ({label})")
        except UserCodeFailed as failed:
            return [], {"unavailable": f"the call under jitlab.jit raised {type(failed.exc).__name__}"}
    explanation = fast.explain()
    findings: dict[str, Finding] = {}  # one per line: each cache entry repeats its line's reason
    for reason in explanation.reasons:
        for part in reason.parts or (reason,):
            finding = reason_finding(part)
            if finding is not None:
                findings.setdefault(finding.location, finding)
    specialised = [r.message for r in explanation.reasons if r.what == "specialisation"]
    summary = {
        "captures": explanation.captures,
        "misses": explanation.misses,
        "cache_entries": explanation.graph_count,
        "graphs_per_call": explanation.graphs_per_call,
        "graph_breaks": len(explanation.graph_breaks),
        "fallback": explanation.disabled,
        "specialisations": list(dict.fromkeys(specialised)),
    }
    return list(findings.values()), summary


@register_check("jit")
def check_jit(ctx: DoctorContext) -> list[Finding]:
    findings, summary = jit_findings(ctx)
    ctx._cache["jit_summary"] = summary
    return findings
