"""Counting a fuzz run: totals and one row per feature class, as a table and as JSON.

A program counts in every feature class it exercises. `captured`: jitlab.jit made at least one cache
entry; `served by graphs`: at least one call ran from an entry (its graphs), not by interpreting or
eagerly; `fell back`: jitlab.jit gave up on the program and runs it eagerly for good (or a capture
was refused). A program whose two eager runs differed (`nondeterministic`) or that failed eagerly
outside its own exceptions (`eager failed`) is counted apart: it proves nothing either way.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from rich.table import Table

from jitlab.fuzz.runner import Outcome

COLUMNS = (
    "programs", "calls", "captured", "served", "fell_back", "tolerance", "random", "unstable", "wrong", "crashed"
)  # fmt: skip
DYNAMO_COLUMNS = ("dynamo_served", "dynamo_wrong", "dynamo_crashed")


def _count(jit: Outcome, dynamo: Outcome | None) -> Counter:
    row: Counter = Counter(programs=1, calls=jit.calls)
    row["captured"] += int(jit.stats.get("entries", 0) > 0)
    row["served"] += int(bool(jit.stats.get("served")))
    row["fell_back"] += int(bool(jit.stats.get("fell_back")))
    if jit.status in ("tolerance", "random", "unstable", "wrong", "crashed"):
        row[jit.status] += 1
    if dynamo is not None:
        row["dynamo_served"] += int(bool(dynamo.stats.get("served")))
        if dynamo.status in ("wrong", "crashed"):
            row[f"dynamo_{dynamo.status}"] += 1
    return row


def summarise(outcomes: dict[tuple[str, str], Outcome]) -> dict[str, Any]:
    """Totals, counts per feature class, programs set apart, and the failures of each method."""
    totals: Counter = Counter()
    per_feature: dict[str, Counter] = {}
    apart: Counter = Counter()
    reasons: Counter = Counter()
    names = sorted({name for name, _ in outcomes}, key=_key)
    for name in names:
        jit = outcomes.get((name, "jit"))
        if jit is None:
            continue
        if jit.status in ("eager_failed", "nondeterministic"):
            apart[jit.status] += 1
            continue
        if jit.stats.get("fell_back") and jit.stats.get("reason"):
            reasons[_reason(jit.stats["reason"])] += 1
        row = _count(jit, outcomes.get((name, "dynamo")))
        totals.update(row)
        for feature in jit.features:
            per_feature.setdefault(feature, Counter()).update(row)
    failures = {
        method: [
            {"program": o.name, "status": o.status, "aspect": o.aspect, "detail": o.detail}
            for (name, m), o in sorted(outcomes.items(), key=lambda kv: _key(kv[0][0]))
            if m == method and o.failed
        ]
        for method in sorted({m for _, m in outcomes})
    }
    return {
        "totals": {c: totals[c] for c in (*COLUMNS, *DYNAMO_COLUMNS)},
        "per_feature": {
            f: {c: row[c] for c in (*COLUMNS, *DYNAMO_COLUMNS)} for f, row in sorted(per_feature.items())
        },
        "set_apart": dict(apart),
        "fallback_reasons": dict(reasons.most_common(10)),
        "failures": failures,
        # differences that prove nothing (fuzz/rounding.py), listed so that a reader can look
        "unstable": [
            {"program": o.name, "detail": o.detail}
            for (name, m), o in sorted(outcomes.items(), key=lambda kv: _key(kv[0][0]))
            if m == "jit" and o.status == "unstable"
        ],
    }


def _reason(text: str) -> str:
    """A fallback reason without the program's own names and numbers, to count alike ones together."""
    text = text.split(";")[0]
    text = re.sub(r"\S*jitlab_fuzz_program_\d+", "<program>", text)
    return re.sub(r"\d+", "N", text)[:120]


def _key(name: str) -> tuple:
    return (not name.isdigit(), int(name) if name.isdigit() else 0, name)


def table(summary: dict[str, Any], dynamo: bool, title: str) -> Table:
    """Rows: the feature classes, then all programs; columns: the counts (dynamo's with --compare-dynamo)."""
    columns: Iterable[str] = (*COLUMNS, *DYNAMO_COLUMNS) if dynamo else COLUMNS
    columns = list(columns)
    out = Table(title=title)
    out.add_column("feature class")
    for column in columns:
        out.add_column(column.replace("_", " "), justify="right")
    out.add_column("served %", justify="right")
    for feature, row in summary["per_feature"].items():
        out.add_row(feature, *(str(row[c]) for c in columns), _share(row))
    totals = summary["totals"]
    out.add_row("[bold]all programs[/]", *(f"[bold]{totals[c]}[/]" for c in columns), _share(totals))
    return out


def _share(row: dict[str, int]) -> str:
    return f"{100.0 * row['served'] / row['programs']:.0f}%" if row["programs"] else "-"
