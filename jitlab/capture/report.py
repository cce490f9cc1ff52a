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
        rows = [r for r in rows if not r.get("broken_case")]
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
        "cases": [
            {
                "name": case.name,
                "source": case.source,
                "tags": list(case.tags),
                "results": {method: results[(case.name, method)] for method in methods},
            }
            for case in cases
        ],
        "broken": broken_cases(cases, methods, results),
        "totals": totals(cases, methods, results),
    }


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
    """Per method, how many failures fall on cases of each tag (what kinds of program fail)."""
    themes: dict[str, Counter] = {}
    for method in methods:
        counter: Counter = Counter()
        for case in cases:
            result = results[(case.name, method)]
            if not result["captured"] and not result.get("unavailable"):
                counter.update(case.tags or ("untagged",))
        themes[method] = counter
    return themes
