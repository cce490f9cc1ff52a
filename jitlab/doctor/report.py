"""Showing a diagnosis: a terminal report (rich) and one JSON object (`--json`)."""

from __future__ import annotations

import linecache
import textwrap
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from jitlab import formatting as fmt

if TYPE_CHECKING:
    from jitlab.doctor.diagnosis import Diagnosis
    from jitlab.doctor.findings import Finding

INDENT = "    "

_STYLE = {
    "sync": "yellow",
    "data-dependent-shape": "magenta",
    "blocking-in-loop": "red",
    "graph-break": "cyan",
    "jit-break": "green",
    "recompile": "blue",
    "compile-error": "bold red",
}


def diagnosis_json(diagnosis: Diagnosis) -> dict[str, Any]:
    return {
        "target": diagnosis.target,
        "inputs": diagnosis.inputs,
        "findings": [finding.to_json() for finding in diagnosis.findings],
        "regime": diagnosis.regime.to_json() if diagnosis.regime else None,
        "graph": diagnosis.graph,
        "jit": diagnosis.jit,
        "trace": diagnosis.trace,
        "checks": diagnosis.checks,
    }


def print_finding(f: Finding, console: Console) -> None:
    """The finding's kind, place and code, its cause, what the other checks saw, the suggestion;
    each paragraph wrapped to the console's width and indented under the first line."""
    style = _STYLE.get(f.kind, "")
    times = f"  (x{f.count})" if f.count > 1 else ""
    code = source_line(f.location)
    shown = f"  [dim]{escape(code)}[/]" if code else ""
    console.print(
        f"[{style}]{f.kind}[/] [bold]{escape(f.location)}[/]{times}{shown}", highlight=False, soft_wrap=True
    )
    paragraphs = [f.detail, *(f"{view.label}: {view.detail}" for view in f.views), f"→ {f.suggestion}"]
    width = max(console.width, 40)
    for text in paragraphs:
        wrapped = textwrap.fill(text, width=width, initial_indent=INDENT, subsequent_indent=INDENT + "  ")
        console.print(wrapped, markup=False, highlight=False, soft_wrap=True)


def source_line(location: str) -> str:
    """The stripped code at `file:line`, or "" (a location that is not a line of a file)."""
    file, _, line = location.rpartition(":")
    return linecache.getline(file, int(line)).strip() if file and line.isdigit() else ""


def print_diagnosis(diagnosis: Diagnosis, console: Console) -> None:
    inputs = f" (inputs: {diagnosis.inputs})" if diagnosis.inputs else ""
    console.print(f"[bold]jitlab doctor[/] {escape(diagnosis.target)}{escape(inputs)}", highlight=False)
    if diagnosis.findings:
        console.print(f"{len(diagnosis.findings)} finding(s), one per line of code:", highlight=False)
        for f in diagnosis.findings:
            print_finding(f, console)
    else:
        ran = ", ".join(diagnosis.checks)
        console.print(f"[green]no findings[/] (checks: {ran})")
    graph = diagnosis.graph
    if graph and graph.get("graph_count") is not None:
        per_call = ", ".join(f"{label} {n}" for label, n in graph.get("compiled_graphs", {}).items())
        console.print(
            f"torch.compile: {graph['graph_count']} graph(s), {graph['graph_break_count']} break(s); "
            f"graphs compiled per call: {per_call}",
            highlight=False,
        )
    jit = diagnosis.jit
    if jit and "unavailable" in jit:
        console.print(f"jitlab.jit: not run ({escape(jit['unavailable'])})", highlight=False)
    elif jit:
        console.print(jit_summary(jit), highlight=False)
    regime = diagnosis.regime
    if regime is not None:
        shares = ", ".join(f"{name} {share:.0%}" for name, share in regime.shares.items())
        borderline = " (borderline)" if regime.shares[regime.verdict] < 0.6 else ""
        console.print(
            f"[bold]regime: {regime.verdict}-bound[/]{borderline} ({shares}); {fmt.seconds(regime.time_s)} per call, "
            f"{fmt.si(regime.flops, 'FLOP')}, {fmt.si(regime.bytes, 'B')} moved, {regime.ops} operators",
            highlight=False,
        )
        if regime.top_ops:
            top = ", ".join(
                f"{op['op']} x{op['calls']} ({fmt.si(op['flops'], 'FLOP')}, {fmt.si(op['bytes'], 'B')})"
                for op in regime.top_ops[:3]
            )
            console.print(f"  heaviest operators: {escape(top)}", highlight=False)
        s = regime.scaling
        if s.get("time_ratio") is not None:
            verdict = {True: "confirms", False: "does not confirm", None: "cannot judge"}[s["confirms"]]
            console.print(
                f"  scaling at 2x ({s['inputs']}): time x{s['time_ratio']:.2f}, work x{s['work_ratio']:.2f}: "
                f"{verdict} the verdict",
                highlight=False,
            )
            if s.get("note"):
                console.print(f"  note: {s['note']}", highlight=False)
        else:
            console.print(f"  scaling check unavailable: {s['inputs']}", highlight=False)
        if regime.devices:
            console.print(f"  peaks of: {escape(', '.join(regime.devices))}", highlight=False)
        if regime.efficiency is not None:
            console.print(
                f"  the device work runs at {regime.efficiency:.0%} of {regime.peaks_owner} peaks",
                highlight=False,
            )
        console.print(f"  suggestion: {regime.suggestion}", highlight=False)
    if diagnosis.trace:
        t = diagnosis.trace
        console.print(
            f"trace: {t['path']} ({t['events']} events, {t['sync_events']} CUDA synchronisation events)",
            highlight=False,
        )


def jit_summary(jit: dict[str, Any]) -> str:
    """One line: what jitlab.jit made of the function over the graph check's four calls."""
    text = (
        f"jitlab.jit: {jit['captures']} capture(s), {jit['cache_entries']} cache entr"
        f"{'y' if jit['cache_entries'] == 1 else 'ies'}, {jit['graphs_per_call']} graph(s) per call, "
        f"{jit['graph_breaks']} break(s), {jit['misses']} miss(es)"
    )
    if jit.get("fallback"):
        text += "; falls back to eager (see the jit-break findings)"
    specialised = jit.get("specialisations") or []
    if specialised:
        shown = ", ".join(specialised[:3]) + (", ..." if len(specialised) > 3 else "")
        text += f"; specialised on {len(specialised)} data value(s): {shown}"
    return escape(text)
