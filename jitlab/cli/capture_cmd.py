"""`jitlab capture`: how much of each corpus program graph-capture tools turn into one correct graph."""

from __future__ import annotations

import fnmatch
import json
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from jitlab.backends.install import require
from jitlab.capture.cases import load_corpora
from jitlab.capture.corpus import Case
from jitlab.capture.names import METHOD_NAMES
from jitlab.cli.app import (
    app,
    console,
    err_console,
    json_option,
    with_envelope,
)
from jitlab.cli.capture_kept import capture_json, collect_results
from jitlab.cli.capture_speed_cmd import speed_command
from jitlab.cli.capture_zoo_cmd import checked_device
from jitlab.cli.cluster_options import check_cluster_options, cluster_options, connect_cluster
from jitlab.errors import UserError

if TYPE_CHECKING:
    from jitlab.engine.cluster import Cluster


def parse_methods(text: str | None) -> list[str]:
    if not text:
        return list(METHOD_NAMES)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in METHOD_NAMES]
    if unknown or not names:
        raise UserError(
            f"unknown capture method {', '.join(unknown) or repr(text)}: choose from {', '.join(METHOD_NAMES)}"
        )
    return list(dict.fromkeys(names))


def corpus_files(
    corpora: tuple[str, ...], zoos: str | None, paritybench: str | None = None
) -> tuple[str, ...]:
    """The corpus files given, then those of the zoos named by `--zoo` (checked to load here), then
    ParityBench's generated files under `--paritybench`."""
    if not corpora and not zoos and not paritybench:
        raise UserError(
            "give corpus files (e.g. corpus/*.py), --zoo transformers,timm,torchvision or --paritybench DIR"
        )
    files = corpora
    if zoos:
        from jitlab.capture.zoo import parse_zoos, zoo_paths

        files = (*files, *zoo_paths(parse_zoos(zoos)))
    if paritybench:
        from jitlab.capture.paritybench import paritybench_files

        files = (*files, *paritybench_files(paritybench))
    return files


def sample_cases(cases: list[Case], sample: int | None, seed: int) -> list[Case]:
    """`sample` cases drawn at random (seeded, so a run can be repeated), in their order; all if None."""
    if sample is None:
        return cases
    if sample < 1:
        raise UserError(f"--sample {sample}: give a positive number of cases")
    if sample >= len(cases):
        return cases
    chosen = set(random.Random(seed).sample(range(len(cases)), sample))
    return [case for i, case in enumerate(cases) if i in chosen]


def select_cases(cases: list[Case], patterns: str | None) -> list[Case]:
    if not patterns:
        return cases
    chosen: set[str] = set()  # by name: ParityBench has 15,031 cases
    for pattern in (p.strip() for p in patterns.split(",") if p.strip()):
        matched = {c.name for c in cases if fnmatch.fnmatchcase(c.name, pattern)}
        if not matched:
            raise UserError(f"no case matches {pattern!r}: run without --cases to see every case's name")
        chosen |= matched
    return [c for c in cases if c.name in chosen]


@app.command("capture")
@click.argument("corpora", nargs=-1, required=False, metavar="[CORPUS...]")
@click.option(
    "--zoo",
    "zoos",
    default=None,
    help="also run the model zoo: transformers, timm, torchvision (comma-separated) or all; "
    "needs pip install 'jitlab[zoo]'",
)
@click.option(
    "--paritybench",
    default=None,
    metavar="DIR",
    help="also run ParityBench's generated programs: a clone of github.com/jansel/pytorch-jit-paritybench",
)
@click.option("--methods", default=None, help=f"comma-separated methods (default: {','.join(METHOD_NAMES)})")
@click.option("--cases", "case_patterns", default=None, help="comma-separated case names or globs to run")
@click.option(
    "--sample", type=int, default=None, help="run only this many cases, drawn at random (see --seed)"
)
@click.option("--seed", type=int, default=0, show_default=True, help="with --sample: the seed of the draw")
@click.option(
    "--timeout",
    type=float,
    default=None,
    help="seconds one method may take on one case [default: 60, 120 with --speed]",
)
@click.option(
    "--calls", type=int, default=3, show_default=True, help="calls per case (outputs and state compared)"
)
@click.option("--jobs", type=int, default=1, show_default=True, help="worker processes side by side")
@click.option("--details", is_flag=True, help="also show the per-case table and every failure's reason")
@click.option(
    "--speed", is_flag=True, help="time eager, jitlab.jit and torch.compile instead (speed-up, first call)"
)
@click.option(
    "--backend",
    type=click.Choice(["inductor", "eager", "aot_eager"]),
    default=None,
    help="with --speed, --shapes, --generate or --train: backend of both jitlab.jit and torch.compile "
    "[default: inductor with --speed, eager otherwise]",
)
@click.option(
    "--budget",
    type=float,
    default=None,
    help="with --speed, --shapes, --generate or --train: seconds of steady-state timing per case and method "
    "[default: 0.5]",
)
@click.option(
    "--device",
    default=None,
    help="with --speed, --shapes, --generate or --train: the torch device the models run on: cpu, cuda "
    "or cuda:N [default: cpu]",
)
@click.option(
    "--shapes",
    is_flag=True,
    help="with --zoo: call each model on 10 (batch, length) shapes (vision: 5 batch sizes x 3 image sizes) "
    "under eager, jitlab.jit and torch.compile: captures, equality, time per call",
)
@click.option(
    "--generate",
    is_flag=True,
    help="with --zoo: 10 generate() calls with prompts of different lengths (language models): captures, "
    "tokens equal to eager, time per generated token",
)
@click.option(
    "--train",
    is_flag=True,
    help="with --zoo: a few training steps under jitlab.jit(step), jitlab.jit(model), torch.compile(model), "
    "torch.compile(step) and torch.compile(model) + torch.compile(opt.step), against eager",
)
@click.option(
    "--optimizer",
    type=click.Choice(["sgd", "adam", "adamw"]),
    default=None,
    help="with --train: the optimizer [default: adamw]",
)
@click.option(
    "--steps", type=int, default=None, help="with --train: training steps compared with eager [default: 5]"
)
@click.option(
    "--amp",
    is_flag=True,
    help="with --train: mixed precision, each step's forward and loss under torch.autocast(device, bfloat16), "
    "the backward pass and the optimizer outside",
)
@click.option(
    "--combine",
    is_flag=True,
    help="report the JSON reports given (saved with --json) as one, the latest result of every case; "
    "runs nothing",
)
@json_option
@cluster_options
def capture_command(
    corpora: tuple[str, ...],
    zoos: str | None,
    paritybench: str | None,
    methods: str | None,
    case_patterns: str | None,
    sample: int | None,
    seed: int,
    timeout: float,
    calls: int,
    jobs: int,
    details: bool,
    speed: bool,
    backend: str | None,
    budget: float | None,
    device: str | None,
    shapes: bool,
    generate: bool,
    train: bool,
    optimizer: str | None,
    steps: int | None,
    amp: bool,
    combine: bool,
    as_json: bool,
    cluster: str | None,
    nodes: str | None,
    spread: bool,
    share_cores: bool,
) -> int:
    """Run every case of the CORPUS files (Python files defining CORPUS = Corpus()) under each
    graph-capture method, and report whether each gave one full graph with outputs equal to eager.
    With --speed, time each case eagerly, under jitlab.jit and under torch.compile instead.
    With --zoo, the models of transformers, timm and torchvision are cases too (small, random weights);
    with --paritybench DIR, every module of ParityBench's generated programs.
    With --zoo and --shapes, --generate or --train, the zoo's models on varying shapes, in generate()
    or in training steps, jitlab.jit beside torch.compile.
    With --cluster, every node of a Ray cluster runs every case (--spread: each case once).
    With --combine, the arguments are JSON reports of earlier runs, reported as one."""
    from jitlab.cli.capture_zoo_cmd import zoo_mode

    mode = zoo_mode(shapes, generate, train)
    if mode is None and (optimizer is not None or steps is not None or amp):
        raise UserError("--optimizer, --steps and --amp apply only to --train: leave them out or add --train")
    if mode is not None:
        refused = {
            "corpus files": corpora, "--paritybench": paritybench, "--combine": combine, "--speed": speed,
            "--methods": methods, "--jobs": jobs != 1, "--calls": calls != 3, "--cluster": cluster,
        }  # fmt: skip
        options = {
            "backend": backend,
            "budget": budget,
            "device": device,
            "timeout": timeout,
            "optimizer": optimizer,
            "steps": steps,
            "amp": amp,
        }
        return _zoo_mode(mode, zoos, refused, options, (case_patterns, sample, seed), details, as_json)
    if combine:
        given = {
            "--zoo": zoos, "--paritybench": paritybench, "--sample": sample, "--timeout": timeout,
            "--jobs": jobs != 1, "--calls": calls != 3, "--speed": speed, "--backend": backend,
            "--budget": budget, "--device": device, "--cluster": cluster,
        }  # fmt: skip
        extra = [name for name, value in given.items() if value]
        if extra:
            raise UserError(
                f"{', '.join(extra)} do not apply to --combine, which runs nothing: leave them out"
            )
        return combine_command(list(corpora), methods, case_patterns, details, as_json)
    check_cluster_options(cluster, nodes, spread, share_cores)
    # every corpus file and every method needs torch: say what to install before loading any file
    require("torch", "torch", "jitlab capture runs PyTorch programs")
    corpora = corpus_files(corpora, zoos, paritybench)
    selection = (case_patterns, sample, seed)
    if cluster and jobs != 1:
        raise UserError(
            "--jobs applies to this machine only: on a cluster each node runs batches side by side"
        )
    if speed:
        if methods or jobs != 1:
            raise UserError(
                "--methods and --jobs do not apply to --speed: it times eager, jitlab.jit and torch.compile, "
                "one worker at a time"
            )
        backend = backend or "inductor"
        budget = 0.5 if budget is None else budget
        device = checked_device(device, here=cluster is None)
        setup = connect_cluster(cluster, nodes, spread, share_cores)
        try:
            paths = list(dict.fromkeys(corpora))
            return speed_command(
                paths, chosen_cases(paths, selection), timeout, backend, budget, details, as_json, setup,
                device,
            )  # fmt: skip
        finally:
            if setup is not None:
                setup.close()
    if backend is not None or budget is not None or device is not None:
        raise UserError(
            "--backend, --budget and --device apply only to --speed, --shapes, --generate and --train: "
            "add one or leave them out"
        )
    timeout = 60.0 if timeout is None else timeout
    if timeout <= 0:
        raise UserError(f"--timeout {timeout:g} is not a positive number of seconds")
    if calls < 1 or jobs < 1:
        raise UserError("--calls and --jobs must be positive integers")
    method_list = parse_methods(methods)
    setup = connect_cluster(cluster, nodes, spread, share_cores)
    try:
        return _coverage(
            list(dict.fromkeys(corpora)),
            selection,
            method_list,
            timeout,
            calls,
            jobs,
            details,
            as_json,
            setup,
        )
    finally:
        if setup is not None:
            setup.close()


def _zoo_mode(
    mode: str,
    zoos: str | None,
    refused: dict,
    options: dict,
    selection: Selection,
    details: bool,
    as_json: bool,
) -> int:
    """`--shapes`, `--generate` or `--train` on the zoo models selected (jitlab/cli/capture_zoo_cmd.py)."""
    from jitlab.cli.capture_zoo_cmd import check_zoo_run, zoo_mode_command

    run = check_zoo_run(mode, bool(zoos), refused, options)
    require("torch", "torch", "jitlab capture runs PyTorch programs")
    paths = list(corpus_files((), zoos))
    envelope = lambda kind, by_machine, make: capture_json(kind, by_machine, make, None)  # noqa: E731
    return zoo_mode_command(
        run, paths, chosen_cases(paths, selection), details, as_json, collect_results, envelope
    )


def combine_command(
    paths: list[str], methods: str | None, case_patterns: str | None, details: bool, as_json: bool
) -> int:
    """`jitlab capture --combine REPORT.json...`: the reports' cases and methods as one report (of
    coverage, or of one zoo mode)."""
    from jitlab.capture.combine import combine_reports, combined_json, read_report
    from jitlab.capture.combine_modes import report_mode

    if paths and report_mode(read_report(paths[0])) is not None:
        if methods:
            raise UserError("--methods does not apply to combined --shapes, --generate or --train reports")
        from jitlab.cli.capture_zoo_cmd import combined_mode_command

        return combined_mode_command(
            paths, lambda cases: select_cases(cases, case_patterns), details, as_json
        )
    combined = combine_reports(paths)
    method_list = combined.methods
    if methods:
        method_list = parse_methods(methods)
        missing = [m for m in method_list if m not in combined.methods]
        if missing:
            raise UserError(
                f"no report given has results of {', '.join(missing)}: "
                f"they hold {', '.join(combined.methods) or 'none'}"
            )
    cases = select_cases(combined.cases, case_patterns)
    if as_json:
        click.echo(
            json.dumps(with_envelope("capture", combined_json(combined, cases, method_list)), indent=1)
        )
        return 0
    for source in combined.sources:
        console.print(
            f"{source['file']}: {source['cases']} cases, {', '.join(source['methods'])}"
            + (" (interrupted)" if source["interrupted"] else ""),
            highlight=False,
        )
    _print_coverage(cases, method_list, combined.results, details)
    return 0


#: the cases that fail eagerly named without --details (ParityBench has thousands)
BROKEN_SHOWN = 10

#: which cases to run: --cases patterns, --sample size and --seed
Selection = tuple[str | None, int | None, int]


def chosen_cases(paths: list[str], selection: Selection) -> list[Case]:
    patterns, sample, seed = selection
    return sample_cases(select_cases(load_corpora(paths), patterns), sample, seed)


def _coverage(
    paths: list[str],
    selection: Selection,
    method_list: list[str],
    timeout: float,
    calls: int,
    jobs: int,
    details: bool,
    as_json: bool,
    setup: Cluster | None,
) -> int:
    # imported here, not at the top: they import torch, which other jitlab commands do not need
    from jitlab.capture.harness import run_cases
    from jitlab.capture.report import to_json

    cases = chosen_cases(paths, selection)

    def run_cluster(on_result: Callable) -> dict:
        from jitlab.capture.distributed import run_on_cluster

        return run_on_cluster(setup, paths, cases, method_list, timeout, calls, on_result=on_result)

    by_machine, kept = collect_results(
        "capture", cases, method_list, setup,
        lambda on_result: run_cases(paths, cases, method_list, timeout, calls=calls, jobs=jobs, on_result=on_result),
        run_cluster,
    )  # fmt: skip
    make = kept.report(
        cases, method_list, lambda done, results: to_json(paths, done, method_list, results, calls)
    )
    if as_json:
        click.echo(json.dumps(capture_json("capture", by_machine, make, setup), indent=1))
        return kept.exit_code(cases, method_list)
    for machine, results in sorted(by_machine.items()):
        if machine:
            console.print(f"[bold]on {machine}[/]", highlight=False)
        _print_coverage(kept.finished(cases, method_list, results), method_list, results, details)
    return kept.exit_code(cases, method_list)


def _print_coverage(cases: list[Case], method_list: list[str], results: dict, details: bool) -> None:
    from jitlab.capture.report import (
        cases_table,
        failure_lines,
        failure_themes,
        graphs_lines,
        graphs_table,
        reason_kinds,
        totals_table,
    )

    if details:
        console.print(cases_table(cases, method_list, results))
        for line in failure_lines(cases, method_list, results):
            console.print(line, highlight=False, markup=False)
        console.print()
        for method, counter in failure_themes(cases, method_list, results).items():
            if counter:
                common = ", ".join(f"{tag} {n}" for tag, n in counter.most_common(6))
                console.print(f"{method} fails most on cases tagged: {common}", highlight=False)
        for method, counter in reason_kinds(cases, method_list, results).items():
            if counter:
                grouped = ", ".join(f"{kind} {n}" for kind, n in counter.most_common())
                console.print(f"{method}: why not one graph, by kind: {grouped}", highlight=False)
        for line in graphs_lines(cases, method_list, results):
            console.print(line, highlight=False, markup=False)
    console.print(totals_table(cases, method_list, results))
    graphs = graphs_table(cases, method_list, results)
    if graphs is not None:
        console.print(graphs)
    broken = [c for c in cases if any(results[(c.name, m)].get("broken_case") for m in method_list)]
    if broken:
        shown = broken if details else broken[:BROKEN_SHOWN]
        more = (
            f" and {len(broken) - len(shown)} more (--details or --json lists them)"
            if len(shown) < len(broken)
            else ""
        )
        err_console.print(
            f"[red]{len(broken)} case(s) fail eagerly and are left out:[/] "
            + ", ".join(c.name for c in shown)
            + more
        )
