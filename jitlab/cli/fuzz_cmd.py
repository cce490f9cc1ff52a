"""`jitlab fuzz`: generated programs run eagerly, under jitlab.jit (and TorchDynamo), compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from jitlab.backends.install import require
from jitlab.cli.app import (
    app,
    console,
    current_machine,
    err_console,
    json_option,
    progress_bar,
    with_envelope,
)
from jitlab.cli.exit_codes import CHECK_FAILED, OK, report_failure
from jitlab.errors import UserError

BACKENDS = ("eager", "aot_eager", "inductor")


def parse_exclude(text: str | None) -> list[str]:
    from jitlab.fuzz.generator import FEATURE_CLASSES

    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    unknown = [n for n in names if n not in FEATURE_CLASSES]
    if unknown:
        raise UserError(
            f"unknown feature class {', '.join(unknown)} in --exclude: choose from {', '.join(FEATURE_CLASSES)}"
        )
    return names


@app.command("fuzz")
@click.option("--programs", type=int, default=100, show_default=True, help="programs to generate and run")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the generator (any integer)")
@click.option(
    "--first", type=int, default=0, show_default=True, help="index of the first program (to split a long run)"
)
@click.option(
    "--backend", type=click.Choice(BACKENDS), default="eager", show_default=True, help="jitlab.jit backend"
)
@click.option(
    "--compare-dynamo", is_flag=True, help='also run every program under torch.compile(backend="eager")'
)
@click.option("--exclude", default=None, help="comma-separated feature classes the programs leave out")
@click.option(
    "--timeout", type=float, default=120.0, show_default=True, help="seconds one program may take per method"
)
@click.option("--jobs", type=int, default=1, show_default=True, help="worker processes side by side")
@click.option(
    "--shrink/--no-shrink", default=True, show_default=True, help="shrink failing programs to reproducers"
)
@click.option(
    "--max-shrink", type=int, default=5, show_default=True, help="failing programs shrunk per method at most"
)
@click.option(
    "--reproducers",
    "reproducer_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".jitlab/fuzz"),
    show_default=True,
    help="folder for the shrunk reproducers",
)
@json_option
def fuzz_command(
    programs: int,
    seed: int,
    first: int,
    backend: str,
    compare_dynamo: bool,
    exclude: str | None,
    timeout: float,
    jobs: int,
    shrink: bool,
    max_shrink: int,
    reproducer_dir: Path,
    as_json: bool,
) -> int:
    """Generate PROGRAMS Python + PyTorch programs from SEED, run each eagerly and under jitlab.jit
    from identical starting states, and report every difference (exit 1 if jitlab.jit was wrong or
    crashed). Failing programs are shrunk to pytest files under --reproducers."""
    if programs < 1 or jobs < 1 or max_shrink < 0 or first < 0:
        raise UserError(
            "--programs and --jobs must be positive integers, --first and --max-shrink at least 0"
        )
    if timeout <= 0:
        raise UserError(f"--timeout {timeout:g} is not a positive number of seconds")
    excluded = parse_exclude(exclude)
    require("torch", "torch", "jitlab fuzz runs PyTorch programs")
    from jitlab.fuzz.runner import run_programs
    from jitlab.fuzz.summary import summarise

    methods = ["jit", "dynamo"] if compare_dynamo else ["jit"]
    progress = progress_bar(f"fuzz ({backend})")
    task = progress.add_task("", total=programs * len(methods))
    bad = {"jit": 0, "dynamo": 0}

    def finished(outcome: Any) -> None:
        bad[outcome.method] += int(outcome.failed)
        text = f"jit wrong/crashed {bad['jit']}" + (f", dynamo {bad['dynamo']}" if compare_dynamo else "")
        progress.update(task, advance=1, description=text)

    names = [str(i) for i in range(first, first + programs)]
    with progress:
        outcomes = run_programs(
            seed, names, methods, backend, timeout, exclude=excluded, jobs=jobs, on_result=finished
        )
    summary = summarise(outcomes)
    reproducers: list[str] = []
    if shrink:
        reproducers = _shrink_failures(seed, outcomes, backend, timeout, excluded, max_shrink, reproducer_dir)
    totals = summary["totals"]
    served, wrong, crashed = totals["served"], totals["wrong"], totals["crashed"]
    if as_json:
        payload = {
            "seed": seed,
            "first": first,
            "backend": backend,
            "programs": programs,
            "wrong": wrong,
            "crashed": crashed,
            "served_by_graphs": served,
            "reproducers": reproducers,
            **summary,
        }
        if compare_dynamo:
            payload["dynamo"] = {
                "wrong": totals["dynamo_wrong"],
                "crashed": totals["dynamo_crashed"],
                "served_by_graphs": totals["dynamo_served"],
            }
        click.echo(json.dumps(with_envelope("fuzz", payload, machine=current_machine()), indent=1))
    else:
        _print(summary, compare_dynamo, backend, seed, reproducers)
    if wrong or crashed:
        if not as_json:
            report_failure(f"jitlab.jit was wrong on {wrong} and crashed on {crashed} of {programs} programs")
        return CHECK_FAILED
    return OK


def _print(summary: dict, dynamo: bool, backend: str, seed: int, reproducers: list[str]) -> None:
    from jitlab.fuzz.summary import table

    console.print(table(summary, dynamo, f"jitlab fuzz --seed {seed} --backend {backend}"))
    for reason, count in list(summary["fallback_reasons"].items())[:5]:
        console.print(f"fell back {count}x: {reason}", highlight=False, markup=False, style="dim")
    for status, count in summary["set_apart"].items():
        err_console.print(f"{count} program(s) set apart: {status.replace('_', ' ')}", highlight=False)
    for method, failures in summary["failures"].items():
        label = "jitlab.jit" if method == "jit" else "TorchDynamo"
        for failure in failures:
            console.print(
                f"{label} {failure['status']} on program {failure['program']}: {failure['detail']}",
                highlight=False,
                markup=False,
            )
    for item in summary["unstable"]:
        console.print(
            f"jitlab.jit unstable on program {item['program']}: {item['detail']}",
            highlight=False,
            markup=False,
        )
    for path in reproducers:
        console.print(f"reproducer: {path}", highlight=False)
    console.print(COLUMNS_LEGEND, highlight=False, markup=False, style="dim")
    console.print(verdict(summary, dynamo), highlight=False, markup=False)


#: what the table's columns count (docs/fuzz.md has the same)
COLUMNS_LEGEND = (
    # the tolerance is the oracle's (jitlab.fuzz.oracle.LOOSE_RTOL, LOOSE_ATOL)
    "columns: captured = jitlab.jit made at least one cache entry; served = at least one call ran from "
    "an entry's graphs (not interpreted, not eagerly); fell back = it gave up and runs the program "
    "eagerly for good; tolerance = equal to eager only within floating-point tolerance (rtol 1e-4, "
    "atol 1e-5); random = differs from eager in a program drawing torch random numbers under a "
    "compiling backend (which draws its own); unstable = differs from eager under a compiling backend "
    "where eager code with rounding noise differs too (the program amplifies rounding); wrong = a "
    "different result; crashed = an exception eager did not raise"
)


def verdict(summary: dict, dynamo: bool) -> str:
    """One line: did jitlab.jit (and TorchDynamo) give a wrong result or crash on any program?"""
    totals = summary["totals"]
    programs, wrong, crashed = totals["programs"], totals["wrong"], totals["crashed"]
    apart = sum(summary["set_apart"].values())
    judged = f"{programs} program(s) judged" + (f", {apart} set apart" if apart else "")
    near = f"{totals['tolerance']} within tolerance, {totals['random']} random, "
    near += f"{totals['unstable']} unstable"
    if wrong or crashed:
        text = f"verdict: FAILED: jitlab.jit was wrong on {wrong} and crashed on {crashed} ({judged}; {near})"
    else:
        text = f"verdict: passed: jitlab.jit was never wrong and never crashed ({judged}; {near})"
    if dynamo:
        text += f"; TorchDynamo: {totals['dynamo_wrong']} wrong, {totals['dynamo_crashed']} crashed"
    return text


def _shrink_failures(
    seed: int,
    outcomes: dict,
    backend: str,
    timeout: float,
    excluded: list[str],
    max_shrink: int,
    directory: Path,
) -> list[str]:
    """Shrink up to `max_shrink` failing programs per method; the reproducers' paths."""
    from jitlab.fuzz.generator import generate
    from jitlab.fuzz.program import render
    from jitlab.fuzz.reproducer import write_reproducer
    from jitlab.fuzz.runner import run_programs
    from jitlab.fuzz.shrinker import shrink, size

    paths = []
    for method in ("jit", "dynamo"):
        failing = [o for (name, m), o in sorted(outcomes.items()) if m == method and o.failed][:max_shrink]
        for outcome in failing:
            original = generate(seed, int(outcome.name), exclude=excluded)

            def judge(candidates: list, outcome: Any = outcome, method: str = method) -> list[bool]:
                named = {f"c{i}": c for i, c in enumerate(candidates)}
                found = run_programs(seed, list(named), [method], backend, timeout, programs=named)
                return [
                    found[(n, method)].status == outcome.status
                    and found[(n, method)].aspect == outcome.aspect
                    for n in named
                ]

            with err_console.status(f"shrinking program {outcome.name} ({method})"):
                small = shrink(original, judge)
            if method == "jit":
                path = write_reproducer(directory, small, backend, outcome.detail, size(original))
            else:
                directory.mkdir(parents=True, exist_ok=True)
                path = directory / f"dynamo_seed{seed}_{outcome.name}.py"
                path.write_text(render(small))
            paths.append(str(path))
    return paths
