"""Showing a diagnosis: a terminal report (rich) and one JSON object (`--json`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding

from jitlab.report import formatting as fmt

if TYPE_CHECKING:
    from jitlab.doctor.diagnosis import Diagnosis

_STYLE = {
    "sync": "yellow",
    "data-dependent-shape": "magenta",
    "blocking-in-loop": "red",
    "graph-break": "cyan",
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
        "trace": diagnosis.trace,
        "checks": diagnosis.checks,
    }


def print_diagnosis(diagnosis: Diagnosis, console: Console) -> None:
    inputs = f" (inputs: {diagnosis.inputs})" if diagnosis.inputs else ""
    console.print(f"[bold]jitlab doctor[/] {escape(diagnosis.target)}{escape(inputs)}", highlight=False)
    if diagnosis.findings:
        console.print(f"{len(diagnosis.findings)} finding(s):", highlight=False)
        for f in diagnosis.findings:
            style = _STYLE.get(f.kind, "")
            times = f"  (x{f.count})" if f.count > 1 else ""
            console.print(f"[{style}]{f.kind}[/] [bold]{escape(f.location)}[/]{times}", highlight=False)
            console.print(Padding(escape(f.detail), (0, 0, 0, 4)), highlight=False)
            console.print(Padding(f"[dim]→[/] {escape(f.suggestion)}", (0, 0, 0, 4)), highlight=False)
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
