"""`jitlab capture --speed`: speed-up against eager of jitlab.jit and torch.compile over a corpus.

The runs happen in `jitlab.capture.speed_worker` processes driven by the capture harness (one time
limit per method, crash recovery). This module starts them and turns their results into per-case
speed-ups (eager median / method median), totals and tables.

Totals are taken over the cases where eager and both compiled methods ran without error and gave
first-call results equal to eager ("both ok"): the geometric mean of each method's speed-up there,
with a 95% percentile-bootstrap interval over cases (the cases are the sample), the geometric mean
of jitlab's speed-up over torch.compile, and the median first-call time (capture + compile + run)
of each method. Every case left out is listed with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from rich.table import Table
from rich.text import Text

from jitlab.capture.corpus import Case
from jitlab.capture.harness import run_one_at_a_time

Results = dict[tuple[str, str], dict[str, Any]]
METHODS = ("eager", "jitlab", "compile")
COMPILED = ("jitlab", "compile")
LABELS = {"eager": "eager", "jitlab": "jitlab.jit", "compile": "torch.compile"}
BOOTSTRAP = 2000
BOOTSTRAP_SEED = 0


def run_speed(
    corpora: list[str],
    cases: list[Case],
    backend: str,
    budget_s: float,
    timeout_s: float,
    on_result: Callable[[str, str, dict[str, Any]], None] | None = None,
    device: str = "cpu",
) -> Results:
    """Results keyed by (case, method) for eager, jitlab and compile on every case (one worker at a
    time: timings need the machine to themselves). Ctrl-C stops the worker and raises
    `KeyboardInterrupt`; what finished before reached `on_result`."""
    options = {"backend": backend, "budget": budget_s, "device": device}
    return run_one_at_a_time(
        corpora, cases, list(METHODS), "jitlab.capture.speed_worker", options, timeout_s, on_result
    )


def ok(result: dict[str, Any]) -> bool:
    """Ran without error, equal to eager on the first call, and timed."""
    return result.get("error") is None and result.get("equal") is True and bool(result.get("median_s"))


def speedup(results: Results, case: str, method: str) -> float | None:
    eager, run = results[(case, "eager")], results[(case, method)]
    if not (ok(eager) and ok(run)):
        return None
    return eager["median_s"] / run["median_s"]


def geometric_mean(values: list[float]) -> float | None:
    return math.exp(float(np.mean(np.log(values)))) if values else None


def bootstrap_ci(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of the geometric mean, resampling cases."""
    if len(values) < 2:
        return None
    logs = np.log(np.asarray(values, dtype=np.float64))
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = logs[rng.integers(0, len(logs), size=(BOOTSTRAP, len(logs)))].mean(axis=1)
    alpha = (1.0 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return math.exp(float(low)), math.exp(float(high))


def both_ok(cases: list[Case], results: Results) -> list[str]:
    return [c.name for c in cases if all(ok(results[(c.name, m)]) for m in METHODS)]


def left_out(cases: list[Case], results: Results) -> list[dict[str, str]]:
    """Each (case, method) that keeps a case out of the totals, with the reason."""
    rows = []
    for case in cases:
        for method in METHODS:
            result = results[(case.name, method)]
            if ok(result):
                continue
            reason = result.get("error") or result.get("mismatch") or "not timed"
            rows.append({"case": case.name, "method": method, "reason": reason})
            if result.get("broken_case"):
                break  # one line for a case whose eager run fails
    return rows


def totals(cases: list[Case], results: Results) -> dict[str, Any]:
    common = both_ok(cases, results)
    out: dict[str, Any] = {"cases": len(cases), "both_ok": len(common), "left_out": len(cases) - len(common)}
    for method in METHODS:
        firsts = [results[(c, method)]["first_call_s"] for c in common]
        entry: dict[str, Any] = {
            "ok": sum(ok(results[(c.name, method)]) for c in cases),
            "median_first_call_s": float(np.median(firsts)) if firsts else None,
        }
        if method != "eager":
            speedups = [speedup(results, c, method) for c in common]
            values = [s for s in speedups if s is not None]
            ci = bootstrap_ci(values)
            entry.update(
                geomean_speedup=geometric_mean(values),
                ci_low=ci[0] if ci else None,
                ci_high=ci[1] if ci else None,
                faster_than_eager=sum(s > 1 for s in values),
            )
        out[method] = entry
    ratios = [results[(c, "compile")]["median_s"] / results[(c, "jitlab")]["median_s"] for c in common]
    ci = bootstrap_ci(ratios)
    out["jitlab_over_compile"] = {
        "geomean": geometric_mean(ratios),
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
    }
    return out


def to_json(
    corpora: list[str],
    cases: list[Case],
    results: Results,
    backend: str,
    budget_s: float,
    device: str = "cpu",
) -> dict:
    import torch

    return {
        "corpora": corpora,
        "backend": backend,
        "budget_s": budget_s,
        "device": device,
        "torch": torch.__version__,
        "cases": [
            {
                "name": case.name,
                "source": case.source,
                "tags": list(case.tags),
                "results": {m: results[(case.name, m)] for m in METHODS},
                "speedup": {m: speedup(results, case.name, m) for m in COMPILED},
            }
            for case in cases
        ],
        "left_out": left_out(cases, results),
        "totals": totals(cases, results),
    }


def seconds_text(value: float | None) -> str:
    """A duration with a unit that suits it (s, ms, µs, ns), 3 significant digits; "-" if unknown."""
    if value is None or not math.isfinite(value):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def totals_table(cases: list[Case], results: Results, backend: str) -> Table:
    t = totals(cases, results)
    table = Table(
        title=f"speed-up against eager, backend {backend}: geometric mean over the {t['both_ok']} of "
        f"{t['cases']} cases where all three ran and matched eager",
        title_justify="left",
    )
    for column in (
        "method",
        "ok",
        "speed-up (geo-mean)",
        "95% CI",
        "faster than eager",
        "first call (median)",
    ):
        table.add_column(column, justify="left" if column == "method" else "right")
    for method in METHODS:
        entry = t[method]
        if method == "eager":
            table.add_row(
                LABELS[method], str(entry["ok"]), "1.00x", "", "", seconds_text(entry["median_first_call_s"])
            )
            continue
        ci = f"{entry['ci_low']:.2f}-{entry['ci_high']:.2f}x" if entry["ci_low"] is not None else "-"
        table.add_row(
            LABELS[method],
            str(entry["ok"]),
            Text(_ratio(entry["geomean_speedup"]), style="bold"),
            ci,
            f"{entry['faster_than_eager']}/{t['both_ok']}",
            seconds_text(entry["median_first_call_s"]),
        )
    relative = t["jitlab_over_compile"]
    if relative["geomean"] is not None:
        ci = f" (95% CI {relative['ci_low']:.2f}-{relative['ci_high']:.2f}x)" if relative["ci_low"] else ""
        table.caption = f"jitlab.jit against torch.compile: {relative['geomean']:.2f}x{ci}"
        table.caption_justify = "left"
    return table


def cases_table(cases: list[Case], results: Results) -> Table:
    table = Table(
        title="per case: steady-state median (speed-up against eager) · first call", title_justify="left"
    )
    for column in ("case", "eager", "jitlab.jit", "torch.compile", "jitlab first", "compile first"):
        table.add_column(column, justify="left" if column == "case" else "right")

    def cell(case: str, method: str) -> Text:
        result = results[(case, method)]
        if result.get("error") is not None:
            return Text("error", style="red")
        if result.get("equal") is False:
            return Text(f"≠ {seconds_text(result.get('median_s'))}", style="red")
        if method == "eager":
            return Text(seconds_text(result["median_s"]))
        mark = " *" if result.get("fallback") else ""
        return Text(f"{seconds_text(result['median_s'])} ({_ratio(speedup(results, case, method))}){mark}")

    def first(case: str, method: str) -> str:
        return seconds_text(results[(case, method)].get("first_call_s"))

    for case in cases:
        name = case.name
        table.add_row(name, *(cell(name, m) for m in METHODS), first(name, "jitlab"), first(name, "compile"))
    if any(results[(c.name, "jitlab")].get("fallback") for c in cases):
        table.caption = "* jitlab.jit gave up capturing (fallback to eager; see jitlab capture --details)"
        table.caption_justify = "left"
    return table
