"""`jitlab capture --zoo --shapes` and `--generate`: zoo models on varying inputs, jitlab.jit beside
TorchDynamo.

The runs happen in `jitlab.capture.vary_worker` processes driven by the capture harness (a time
limit per method, crash recovery: a model that crashes or hangs is a failed row and the run goes
on). This module starts them and turns their results into per-model rows, totals and tables.

A model **meets the target** of issue 44 when jitlab.jit was equal to eager on every call, never
fell back to eager for good, and captured at most 2 times (text models on shapes) or no more than
TorchDynamo compiled graphs (vision models on shapes, and generation). Times are compared over the
models where jitlab.jit and torch.compile both ran without error and equal to eager: the geometric
mean of torch.compile's time per call (per generated token) over jitlab.jit's, with a 95%
percentile-bootstrap interval over the models; above 1, jitlab.jit is the faster.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from rich.table import Table
from rich.text import Text

from jitlab.capture.compile_counts import reason_lines
from jitlab.capture.corpus import Case
from jitlab.capture.harness import run_one_at_a_time
from jitlab.capture.speed import bootstrap_ci, geometric_mean, seconds_text

Results = dict[tuple[str, str], dict[str, Any]]
METHODS = ("eager", "jitlab", "compile")
LABELS = {"eager": "eager", "jitlab": "jitlab.jit", "compile": "torch.compile"}
#: at most this many captures on the shapes of a text model (issue 44's target; TorchDynamo: 2)
TEXT_CAPTURES = 2


def run_varying(
    corpora: list[str],
    cases: list[Case],
    mode: str,
    backend: str,
    budget_s: float,
    timeout_s: float,
    on_result: Callable[[str, str, dict[str, Any]], None] | None = None,
    device: str = "cpu",
) -> Results:
    """Results keyed by (case, method), one worker at a time (the times need the machine)."""
    options = {"mode": mode, "backend": backend, "budget": budget_s, "device": device}
    return run_one_at_a_time(
        corpora, cases, list(METHODS), "jitlab.capture.vary_worker", options, timeout_s, on_result
    )


def ok(result: dict[str, Any]) -> bool:
    """Ran without error, equal to eager on every call, and timed."""
    return result.get("error") is None and result.get("equal") is True and bool(result.get("median_s"))


def unit(mode: str) -> str:
    """The time each mode reports: per call, or per generated token."""
    return "per_token_s" if mode == "generate" else "per_call_s"


def falls_back_at(result: dict[str, Any]) -> int | None:
    """The first call jitlab.jit ran eagerly (1-based), or None."""
    served = result.get("served") or []
    return served.index("eager") + 1 if "eager" in served else None


def meets_target(case: Case, mode: str, results: Results) -> bool | None:
    """Whether jitlab.jit meets issue 44's target on this model (see the module docstring); None
    when it cannot be said (an error, or TorchDynamo's count is missing where it is the bar)."""
    jit, dynamo = results[(case.name, "jitlab")], results[(case.name, "compile")]
    if jit.get("error") is not None or "captures" not in jit:
        return None
    if not jit.get("equal") or jit.get("fallback_for_good"):
        return False
    if mode == "shapes" and "text" in case.tags:
        return jit["captures"] <= TEXT_CAPTURES
    if dynamo.get("error") is not None or "graphs" not in dynamo:
        return None
    return jit["captures"] <= dynamo["graphs"]


def ratio(results: Results, case: str, mode: str) -> float | None:
    """torch.compile's time over jitlab.jit's (above 1: jitlab.jit the faster), where both are ok."""
    jit, dynamo = results[(case, "jitlab")], results[(case, "compile")]
    if not (ok(jit) and ok(dynamo)):
        return None
    return dynamo[unit(mode)] / jit[unit(mode)]


def totals(cases: list[Case], mode: str, results: Results) -> dict[str, Any]:
    ran = [c for c in cases if not results[(c.name, "eager")].get("error")]
    out: dict[str, Any] = {
        "models": len(cases),
        "ran": len(ran),
        "broken": len(cases) - len(ran),
        "eager": {},
    }
    for method in ("jitlab", "compile"):
        rows = [results[(c.name, method)] for c in ran]
        counts = [
            r.get("captures" if method == "jitlab" else "graphs") for r in rows if r.get("error") is None
        ]
        counts = [n for n in counts if n is not None]
        out[method] = {
            "errors": sum(r.get("error") is not None for r in rows),
            "equal": sum(r.get("equal") is True for r in rows),
            "fallback": sum(bool(r.get("fallback")) for r in rows),
            "median_graphs": statistics.median(counts) if counts else None,
            "max_graphs": max(counts, default=None),
        }
    verdicts = [meets_target(c, mode, results) for c in ran]
    out["jitlab"]["meets_target"] = sum(v is True for v in verdicts)
    ratios = [r for c in ran if (r := ratio(results, c.name, mode)) is not None]
    ci = bootstrap_ci(ratios)
    out["compile_over_jitlab"] = {
        "models": len(ratios),
        "geomean": geometric_mean(ratios),
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
    }
    for method in METHODS:
        times = [
            results[(c.name, method)][unit(mode)] for c in ran if ratio(results, c.name, mode) is not None
        ]
        out[method]["median_" + unit(mode)] = statistics.median(times) if times else None
    return out


def to_json(
    corpora: list[str],
    cases: list[Case],
    results: Results,
    mode: str,
    backend: str,
    budget_s: float,
    device: str = "cpu",
) -> dict:
    import torch

    return {
        "mode": mode,
        "corpora": corpora,
        "backend": backend,
        "budget_s": budget_s,
        "device": device,
        "torch": torch.__version__,
        "cases": [
            {
                "name": case.name,
                "tags": list(case.tags),
                "results": {m: results[(case.name, m)] for m in METHODS},
                "meets_target": meets_target(case, mode, results),
                "compile_over_jitlab": ratio(results, case.name, mode),
            }
            for case in cases
        ],
        "totals": totals(cases, mode, results),
    }


def _count(result: dict[str, Any], key: str) -> Text:
    if result.get("error") is not None:
        return Text("error", style="red")
    text = Text(str(result.get(key, "-")))
    if result.get("equal") is False:
        text.append(" ≠", style="red")
    return text


def _falls_back(result: dict[str, Any]) -> Text:
    if result.get("error") is not None:
        return Text("")
    at = falls_back_at(result)
    if at is not None:
        return Text(f"from {at}", style="yellow")
    return Text("yes", style="yellow") if result.get("fallback") else Text("no")


def _time(result: dict[str, Any], mode: str) -> str:
    return seconds_text(result.get(unit(mode))) if result.get("error") is None else "-"


def cases_table(cases: list[Case], mode: str, results: Results) -> Table:
    what = "generate calls (prompt lengths)" if mode == "generate" else "shapes"
    per = "per generated token" if mode == "generate" else "per call"
    table = Table(title=f"per model, over its {what}; times {per}", title_justify="left")
    columns = ("model", "calls", "jit captures", "jit hits", "jit eager", "dynamo graphs", "target")
    for column in (*columns, "eager", "jitlab.jit", "torch.compile", "compile/jit"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for case in cases:
        eager, jit, dynamo = (results[(case.name, m)] for m in METHODS)
        if eager.get("error") is not None:
            table.add_row(case.name, Text("eager fails", style="red"), *[""] * 9)
            continue
        target = meets_target(case, mode, results)
        table.add_row(
            case.name,
            str(len(eager.get("calls", []))),
            _count(jit, "captures"),
            str(jit.get("hits", "-")),
            _falls_back(jit),
            _count(dynamo, "graphs"),
            "-" if target is None else ("yes" if target else Text("no", style="yellow")),
            _time(eager, mode),
            _time(jit, mode),
            _time(dynamo, mode),
            "-" if (r := ratio(results, case.name, mode)) is None else f"{r:.2f}x",
        )
    table.caption = (
        "captures (jitlab.jit) and graphs (TorchDynamo) over the first pass through the calls; ≠: an output "
        "differs from eager's; jit eager: the first call jitlab.jit ran eagerly; target: issue 44's"
    )
    table.caption_justify = "left"
    return table


def totals_table(cases: list[Case], mode: str, results: Results, backend: str) -> Table:
    t = totals(cases, mode, results)
    per = "per token" if mode == "generate" else "per call"
    table = Table(
        title=f"{mode}: {t['ran']} of {t['models']} models, backend {backend}", title_justify="left"
    )
    for column in (
        "method",
        "equal on every call",
        "errors",
        "falls back",
        "captures/graphs (median, max)",
        f"time {per} (median)",
    ):
        table.add_column(column, justify="left" if column == "method" else "right")
    table.add_row("eager", "", "", "", "", seconds_text(t["eager"]["median_" + unit(mode)]))
    for method in ("jitlab", "compile"):
        entry = t[method]
        table.add_row(
            LABELS[method],
            f"{entry['equal']}/{t['ran']}",
            str(entry["errors"]),
            str(entry["fallback"]),
            f"{entry['median_graphs']:g}, {entry['max_graphs']}"
            if entry["median_graphs"] is not None
            else "-",
            seconds_text(entry["median_" + unit(mode)]),
        )
    relative = t["compile_over_jitlab"]
    lines = [f"jitlab.jit meets issue 44's target on {t['jitlab']['meets_target']} of {t['ran']} models"]
    if relative["geomean"] is not None:
        ci = f" (95% CI {relative['ci_low']:.2f}-{relative['ci_high']:.2f}x)" if relative["ci_low"] else ""
        lines.append(
            f"torch.compile's time {per} over jitlab.jit's: {relative['geomean']:.2f}x{ci}, geometric mean over "
            f"{relative['models']} models (above 1: jitlab.jit is faster)"
        )
    return with_caption(table, lines)


def with_caption(table: Table, lines: list[str]) -> Table:
    """`table` with `lines` under it, left-aligned."""
    table.caption = "\n".join(lines)
    table.caption_justify = "left"
    return table


def detail_lines(cases: list[Case], results: Results) -> list[str]:
    """Per model: the calls eager rejected, every difference, error, fallback and break reason."""
    lines = []
    for case in cases:
        eager = results[(case.name, "eager")]
        if eager.get("error") is not None:
            lines.append(f"{case.name}: {eager['error']}")
            continue
        by_reason: dict[str, list[str]] = {}
        for dropped in eager.get("dropped", []):
            by_reason.setdefault(dropped["reason"], []).append(dropped["call"])
        for reason, calls in by_reason.items():
            lines.append(f"{case.name}: eager rejects {', '.join(calls)} (left out): {reason}")
        for method in ("jitlab", "compile"):
            lines += reason_lines(
                case.name, LABELS[method], results[(case.name, method)], ("error", "mismatch")
            )
    return lines
