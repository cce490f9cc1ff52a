"""Turning capture results into totals, a JSON document and terminal tables.

Totals count, per method, the cases whose eager run works: how many were one full graph, how many
gave outputs and state equal to eager, and how many were both ("captured"). A case whose eager run
fails is broken, reported apart and left out of every denominator.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.table import Table
from rich.text import Text

from jitlab.capture.corpus import Case

Results = dict[tuple[str, str], dict[str, Any]]


def totals(cases: list[Case], methods: list[str], results: Results) -> dict[str, dict[str, Any]]:
    """Per method: cases, captured, rate, full_graph, equal, errors, timeouts, unavailable."""
    out: dict[str, dict[str, Any]] = {}
    for method in methods:
        rows = [results[(case.name, method)] for case in cases]
        # a case that fails eagerly, or that a combined report has no result for, is left out
        rows = [r for r in rows if not r.get("broken_case") and not r.get("not_run")]
        captured = sum(bool(r["captured"]) for r in rows)
        out[method] = {
            "cases": len(rows),
            "captured": captured,
            "rate": captured / len(rows) if rows else None,
            "full_graph": sum(r["full_graph"] is True for r in rows),
            "equal": sum(r["equal"] is True for r in rows),
            "errors": sum(r["error"] is not None and not r.get("unavailable") for r in rows),
            "unavailable": sum(bool(r.get("unavailable")) for r in rows),
        }
    return out


GRAPH_METHODS = ("jitlab", "dynamo")


def graphs_summary(cases: list[Case], methods: list[str], results: Results) -> dict[str, dict[str, Any]]:
    """Per method that reports it (jitlab; dynamo with graph breaks allowed): graphs one call runs,
    mean and median over the cases, programs that run more than one graph per call (split at graph
    breaks), and programs that run none (eagerly)."""
    import statistics

    out: dict[str, dict[str, Any]] = {}
    for method in methods:
        if method not in GRAPH_METHODS:
            continue
        counts = [
            results[(c.name, method)].get("graphs_per_call")
            for c in cases
            if not results[(c.name, method)].get("broken_case")
        ]
        counts = [n for n in counts if n is not None]
        out[method] = {
            "cases": len(counts),
            "mean": statistics.fmean(counts) if counts else None,
            "median": statistics.median(counts) if counts else None,
            "with_breaks": sum(n > 1 for n in counts),
            "no_graph": sum(n == 0 for n in counts),
        }
    return out


def graphs_table(cases: list[Case], methods: list[str], results: Results) -> Table | None:
    summary = graphs_summary(cases, methods, results)
    if not summary:
        return None
    table = Table(
        title="graphs per call (dynamo: with graph breaks allowed, fullgraph=False)", title_justify="left"
    )
    for column in ("method", "cases", "mean", "median", "more than one graph", "no graph (eager)"):
        table.add_column(column, justify="left" if column == "method" else "right")
    for method, t in summary.items():
        mean = f"{t['mean']:.2f}" if t["mean"] is not None else "-"
        median = f"{t['median']:g}" if t["median"] is not None else "-"
        table.add_row(method, str(t["cases"]), mean, median, str(t["with_breaks"]), str(t["no_graph"]))
    return table


def graphs_lines(cases: list[Case], methods: list[str], results: Results) -> list[str]:
    """The cases where jitlab or dynamo run more than one graph per call (or none), with the counts."""
    shown = [m for m in methods if m in GRAPH_METHODS]
    lines = []
    for case in cases:
        counts = {m: results[(case.name, m)].get("graphs_per_call") for m in shown}
        if any(n is not None and n != 1 for n in counts.values()):
            text = ", ".join(f"{m} {'-' if n is None else n}" for m, n in counts.items())
            lines.append(f"{case.name}: graphs per call: {text}")
    return lines


def broken_cases(cases: list[Case], methods: list[str], results: Results) -> list[str]:
    return [c.name for c in cases if any(results[(c.name, m)].get("broken_case") for m in methods)]


def to_json(
    corpora: list[str], cases: list[Case], methods: list[str], results: Results, calls: int
) -> dict[str, Any]:
    import torch

    return {
        "corpora": corpora,
        "methods": methods,
        "calls": calls,
        "torch": torch.__version__,
        **results_json(cases, methods, results),
    }


def results_json(cases: list[Case], methods: list[str], results: Results) -> dict[str, Any]:
    """The part of the `--json` report a run and `--combine` share: each case's results (a method
    a combined case never ran under is left out, not reported as a failure), the cases that fail
    eagerly, the totals, graphs per call and the kinds of reasons."""
    return {
        "cases": [
            {
                "name": case.name,
                "source": case.source,
                "tags": list(case.tags),
                "results": {
                    m: results[(case.name, m)] for m in methods if not results[(case.name, m)].get("not_run")
                },
            }
            for case in cases
        ],
        "broken": broken_cases(cases, methods, results),
        "totals": totals(cases, methods, results),
        "graphs_per_call": graphs_summary(cases, methods, results),
        "reason_kinds": {
            m: dict(c.most_common()) for m, c in reason_kinds(cases, methods, results).items() if c
        },
    }


def reason_kinds(cases: list[Case], methods: list[str], results: Results) -> dict[str, Counter]:
    """Per method, how many cases not captured as one graph had a reason of each kind (a case counts
    once per kind; only methods that report kinds, such as jitlab, have any)."""
    kinds: dict[str, Counter] = {}
    for method in methods:
        counter: Counter = Counter()
        for case in cases:
            counter.update(results[(case.name, method)].get("kinds") or ())
        kinds[method] = counter
    return kinds


def totals_table(cases: list[Case], methods: list[str], results: Results) -> Table:
    table = Table(title=f"capture over {len(cases)} cases", title_justify="left")
    for column in ("method", "captured", "rate", "one graph", "equal to eager", "errors"):
        table.add_column(column, justify="left" if column == "method" else "right")
    for method, t in totals(cases, methods, results).items():
        if t["unavailable"] == t["cases"] and t["cases"]:
            reason = next(r["error"] for (c, m), r in results.items() if m == method)
            table.add_row(method, Text(f"unavailable: {reason}", style="dim"), "", "", "", "")
            continue
        rate = f"{t['rate']:.1%}" if t["rate"] is not None else "-"
        table.add_row(
            method,
            f"{t['captured']}/{t['cases']}",
            Text(rate, style="bold"),
            str(t["full_graph"]),
            str(t["equal"]),
            str(t["errors"]),
        )
    return table


def symbol(result: dict[str, Any]) -> Text:
    """One cell of the per-case table: ✓ captured, G not one graph, ≠ differs, E error, - n/a."""
    if result.get("unavailable"):
        return Text("-", style="dim")
    if result["captured"]:
        return Text("✓", style="green")
    if result["equal"] is None:
        return Text("E", style="red")
    if not result["equal"]:
        return Text("≠", style="red bold")
    return Text("G", style="yellow")


def reason(result: dict[str, Any]) -> str:
    return result.get("error") or result.get("mismatch") or result.get("note") or "not one full graph"


def cases_table(cases: list[Case], methods: list[str], results: Results) -> Table:
    table = Table(
        title="per case: ✓ captured · G not one graph · ≠ output/state differs · E error",
        title_justify="left",
    )
    table.add_column("case")
    for method in methods:
        table.add_column(method, justify="center")
    for case in cases:
        table.add_row(case.name, *(symbol(results[(case.name, m)]) for m in methods))
    return table


def failure_lines(cases: list[Case], methods: list[str], results: Results) -> list[str]:
    lines = []
    for case in cases:
        for method in methods:
            result = results[(case.name, method)]
            if not result["captured"] and not result.get("unavailable"):
                lines.append(f"{case.name} · {method}: {reason(result)}")
    return lines


def failure_themes(cases: list[Case], methods: list[str], results: Results) -> dict[str, Counter]:
    """Per method, how many failures fall on cases of each tag (what kinds of program fail). Cases
    without tags count nowhere: "fails most on: untagged 1" said nothing."""
    themes: dict[str, Counter] = {}
    for method in methods:
        counter: Counter = Counter()
        for case in cases:
            result = results[(case.name, method)]
            if not result["captured"] and not result.get("unavailable"):
                counter.update(case.tags)
        themes[method] = counter
    return themes
