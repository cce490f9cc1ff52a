"""`jitlab capture --zoo --train`: a few training steps of every zoo model under five arrangements of
jitlab.jit and torch.compile, each against eager.

The runs happen in `jitlab.capture.train_worker` processes driven by the capture harness (a time
limit per arrangement, crash recovery: a model that crashes or hangs is a failed row and the run
goes on). This module starts them and turns their results into per-model rows, totals and tables.

Totals per arrangement: models where it ran, bitwise equal to eager at every step (losses, every
parameter and buffer), equal within capture's tolerance, the largest difference seen, fallbacks
(jitlab.jit ran the step eagerly; TorchDynamo reached its recompile limit), median graphs and
breaks, median first-step time, and the geometric mean of its time per step against eager. Issue
45's comparisons are under the table: `jitlab.jit(step)` against the best torch.compile arrangement
(`torch.compile(model)` + `torch.compile(opt.step)`) on time per step, and its median first step
against `torch.compile(step)`'s.
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
from jitlab.capture.varying import with_caption

Results = dict[tuple[str, str], dict[str, Any]]
ARRANGEMENTS = ("eager", "jit_step", "jit_model", "compile_model", "compile_step", "compile_model_opt")
LABELS = {
    "eager": "eager",
    "jit_step": "jitlab.jit(step)",
    "jit_model": "jitlab.jit(model)",
    "compile_model": "torch.compile(model)",
    "compile_step": "torch.compile(step)",
    "compile_model_opt": "torch.compile(model) + torch.compile(opt.step)",
}
SHORT = {**LABELS, "compile_model_opt": "compile(model)+compile(opt.step)"}
#: the best torch.compile arrangement, which issue 45 asks jitlab.jit(step) to beat per step
BEST_COMPILE = "compile_model_opt"


def run_training(
    corpora: list[str],
    cases: list[Case],
    backend: str,
    optimizer: str,
    steps: int,
    budget_s: float,
    timeout_s: float,
    on_result: Callable[[str, str, dict[str, Any]], None] | None = None,
    device: str = "cpu",
    amp: bool = False,
) -> Results:
    """Results keyed by (case, arrangement), one worker at a time (the times need the machine);
    with `amp`, mixed-precision steps (train_steps.AMP_STEPS)."""
    options = {
        "backend": backend,
        "budget": budget_s,
        "optimizer": optimizer,
        "steps": steps,
        "device": device,
        "amp": amp,
    }
    worker = "jitlab.capture.train_worker"
    return run_one_at_a_time(corpora, cases, list(ARRANGEMENTS), worker, options, timeout_s, on_result)


def ok(result: dict[str, Any]) -> bool:
    """Ran without error and timed (equality is reported, not required: a step within rounding of
    eager is still a step)."""
    return result.get("error") is None and bool(result.get("per_step_s"))


def relative(results: Results, case: str, over: str, under: str) -> float | None:
    """`over`'s time per step divided by `under`'s (above 1: `under` is the faster)."""
    a, b = results[(case, over)], results[(case, under)]
    return a["per_step_s"] / b["per_step_s"] if ok(a) and ok(b) else None


def _geomean(values: list[float]) -> dict[str, Any]:
    ci = bootstrap_ci(values)
    return {
        "models": len(values),
        "geomean": geometric_mean(values),
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
    }


def _median(values: list[Any]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def totals(cases: list[Case], results: Results) -> dict[str, Any]:
    ran = [c for c in cases if not results[(c.name, "eager")].get("error")]
    out: dict[str, Any] = {"models": len(cases), "ran": len(ran), "broken": len(cases) - len(ran)}
    out["eager_repeats"] = sum(results[(c.name, "eager")].get("eager_repeats") is True for c in ran)
    for name in ARRANGEMENTS:
        rows = [results[(c.name, name)] for c in ran]
        done = [r for r in rows if r.get("error") is None]
        entry: dict[str, Any] = {
            "ran": len(done),
            "errors": len(rows) - len(done),
            "bitwise": sum(r.get("bitwise") is True for r in done),
            "equal": sum(r.get("equal") is True for r in done),
            "max_param_diff": max((r.get("max_param_diff", 0.0) for r in done), default=None),
            "max_loss_diff": max((r.get("max_loss_diff", 0.0) for r in done), default=None),
            "fallback": sum(bool(r.get("fallback")) for r in done),
            "median_graphs": _median([r.get("graphs") for r in done]),
            "median_breaks": _median([r.get("breaks") for r in done]),
            "median_first_step_s": _median([r.get("first_step_s") for r in done]),
            "median_first_two_steps_s": _median([r.get("first_two_steps_s") for r in done]),
            "median_per_step_s": _median([r.get("per_step_s") for r in done if ok(r)]),
        }
        if name != "eager":
            entry["speedup_over_eager"] = _geomean(
                [s for c in ran if (s := relative(results, c.name, "eager", name)) is not None]
            )
        out[name] = entry
    out["best_compile_over_jit_step"] = _geomean(
        [s for c in ran if (s := relative(results, c.name, BEST_COMPILE, "jit_step")) is not None]
    )
    return out


def to_json(
    corpora: list[str],
    cases: list[Case],
    results: Results,
    backend: str,
    optimizer: str,
    steps: int,
    budget_s: float,
    device: str = "cpu",
    amp: bool = False,
) -> dict:
    import torch

    return {
        "mode": "train",
        "corpora": corpora,
        "backend": backend,
        "optimizer": optimizer,
        "steps": steps,
        "amp": amp,
        "budget_s": budget_s,
        "device": device,
        "torch": torch.__version__,
        "arrangements": {name: LABELS[name] for name in ARRANGEMENTS},
        "cases": [
            {
                "name": case.name,
                "tags": list(case.tags),
                "results": {a: results[(case.name, a)] for a in ARRANGEMENTS},
            }
            for case in cases
        ],
        "totals": totals(cases, results),
    }


def cell(result: dict[str, Any]) -> Text:
    """One arrangement on one model: equality (≡ bitwise, ≈ within tolerance, ≠ beyond, * fell
    back), graphs/breaks, time per step."""
    if result.get("error") is not None:
        return Text("error", style="red")
    if result.get("bitwise"):
        mark = Text("≡", style="green")
    elif result.get("equal"):
        mark = Text(f"≈{result.get('max_param_diff', 0.0):.0e}", style="yellow")
    else:
        mark = Text(f"≠{result.get('max_param_diff', 0.0):.0e}", style="red")
    if result.get("fallback"):
        mark.append("*", style="yellow")
    counts = f" {result['graphs']}g/{result['breaks']}b" if "graphs" in result else ""
    return mark + Text(f"{counts} {seconds_text(result.get('per_step_s'))}")


def cases_table(cases: list[Case], results: Results) -> Table:
    table = Table(title="per model: equality with eager, graphs/breaks, time per step", title_justify="left")
    table.add_column("model")
    for name in ARRANGEMENTS:
        table.add_column(SHORT[name], justify="right")
    for case in cases:
        eager = results[(case.name, "eager")]
        if eager.get("error") is not None:
            table.add_row(case.name, Text("eager fails", style="red"), *[""] * (len(ARRANGEMENTS) - 1))
            continue
        table.add_row(case.name, *(cell(results[(case.name, name)]) for name in ARRANGEMENTS))
    table.caption = (
        "≡ bitwise equal to eager at every step (losses, parameters, buffers); ≈ within rtol 1e-5 / atol 1e-6, "
        "≠ beyond (largest parameter difference); * fell back to eager (jitlab.jit) or hit the recompile limit "
        "(TorchDynamo); g/b: graphs/breaks"
    )
    table.caption_justify = "left"
    return table


def _difference(value: float | None) -> str:
    return "-" if value is None else ("0" if value == 0 else f"{value:.2g}")


def _speedup(entry: dict[str, Any] | None) -> str:
    if not entry or entry["geomean"] is None:
        return "-"
    ci = f" [{entry['ci_low']:.2f}, {entry['ci_high']:.2f}]" if entry["ci_low"] is not None else ""
    return f"{entry['geomean']:.2f}x{ci}"


def totals_table(
    cases: list[Case], results: Results, backend: str, optimizer: str, steps: int, amp: bool = False
) -> Table:
    t = totals(cases, results)
    precision = ", forward under autocast bfloat16" if amp else ""
    table = Table(
        title=f"training: {t['ran']} of {t['models']} models, {steps} steps of {optimizer}{precision}, "
        f"backend {backend}",
        title_justify="left",
    )
    columns = (
        "arrangement", "ran", "bitwise", "equal", "largest difference", "falls back", "graphs/breaks (median)",
        "first step (median)", "per step (median)", "speed-up over eager",
    )  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "arrangement" else "right")
    for name in ARRANGEMENTS:
        e = t[name]
        graphs = f"{e['median_graphs']:g}/{e['median_breaks']:g}" if e["median_graphs"] is not None else "-"
        table.add_row(
            LABELS[name],
            f"{e['ran']}/{t['ran']}",
            str(e["bitwise"]),
            str(e["equal"]),
            _difference(e["max_param_diff"]),
            str(e["fallback"]),
            graphs,
            seconds_text(e["median_first_step_s"]),
            seconds_text(e["median_per_step_s"]),
            _speedup(e.get("speedup_over_eager")) if name != "eager" else "1.00x",
        )
    lines = [f"eager repeats itself bitwise on {t['eager_repeats']} of {t['ran']} models"]
    best = t["best_compile_over_jit_step"]
    if best["geomean"] is not None:
        lines.append(
            f"{LABELS[BEST_COMPILE]}'s time per step over jitlab.jit(step)'s: {_speedup(best)}, geometric mean "
            f"over {best['models']} models (above 1: jitlab.jit(step) is faster)"
        )
    two = {name: t[name]["median_first_two_steps_s"] for name in ("jit_step", "compile_step")}
    if None not in two.values():
        lines.append(
            f"first two steps (median): {LABELS['jit_step']} {seconds_text(two['jit_step'])}, "
            f"{LABELS['compile_step']} {seconds_text(two['compile_step'])} (jitlab.jit's compiled graphs "
            "and their backward run first in the second step)"
        )
    return with_caption(table, lines)


def detail_lines(cases: list[Case], results: Results) -> list[str]:
    """Per model and arrangement: errors, the first difference, fallback and break reasons."""
    lines = []
    for case in cases:
        eager = results[(case.name, "eager")]
        if eager.get("error") is not None:
            lines.append(f"{case.name}: {eager['error']}")
            continue
        if eager.get("eager_repeats") is False:
            lines.append(f"{case.name}: eager does not repeat itself ({eager.get('eager_difference')})")
        for name in ARRANGEMENTS[1:]:
            lines += reason_lines(
                case.name, LABELS[name], results[(case.name, name)], ("error", "first_difference")
            )
    return lines
