"""`jitlab capture --zoo ... --shapes | --generate | --train`: the zoo's models on varying inputs,
in generation, and in training, jitlab.jit beside torch.compile (see docs/capture.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from jitlab.capture.corpus import Case
from jitlab.cli.app import console, err_console, with_envelope
from jitlab.errors import UserError

ZOO_MODES = ("shapes", "generate", "train")
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_BUDGET_S = 0.5
DEFAULT_STEPS = 5
MAX_STEPS = 100


@dataclass(frozen=True)
class ZooRun:
    """What one `--shapes`, `--generate` or `--train` run does (checked options)."""

    mode: str
    backend: str
    budget_s: float
    timeout_s: float
    optimizer: str
    steps: int
    device: str = "cpu"
    amp: bool = False  # --train --amp: the steps' forward under torch.autocast (train_steps.py)


def checked_device(device: str | None, here: bool = True) -> str:
    """The torch device `--device` names (cpu when not given), checked against what this machine's
    torch can use before any worker starts; with `here` false (a cluster, whose head need not have a
    GPU), for its form only: each node's worker checks it."""
    if device is None:
        return "cpu"
    from jitlab.capture.devices import check_device, parse_device

    try:
        return check_device(device) if here else parse_device(device)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def zoo_mode(shapes: bool, generate: bool, train: bool) -> str | None:
    """The zoo mode asked for, or None; two at once is an error."""
    chosen = [name for name, flag in zip(ZOO_MODES, (shapes, generate, train)) if flag]
    if len(chosen) > 1:
        raise UserError(f"--{' and --'.join(chosen)} are separate runs: give one of them")
    return chosen[0] if chosen else None


def check_zoo_run(mode: str, zoo_given: bool, refused: dict[str, Any], options: dict[str, Any]) -> ZooRun:
    """The run's settings, after refusing what does not apply to a zoo mode. `refused` maps the
    options that do not apply to their values (given when truthy); `options` holds backend,
    budget, timeout, optimizer and steps as given (None: not given)."""
    extra = [name for name, value in refused.items() if value]
    if extra:
        raise UserError(
            f"{', '.join(extra)} do not apply to --{mode}: it runs the --zoo models with eager, jitlab.jit and "
            "torch.compile, one worker at a time; leave them out"
        )
    if not zoo_given:
        raise UserError(f"--{mode} runs zoo models: add --zoo transformers (or timm, torchvision, all)")
    if mode != "train" and (
        options["optimizer"] is not None or options["steps"] is not None or options.get("amp")
    ):
        raise UserError("--optimizer, --steps and --amp apply only to --train: leave them out or add --train")
    budget = DEFAULT_BUDGET_S if options["budget"] is None else options["budget"]
    timeout = DEFAULT_TIMEOUT_S if options["timeout"] is None else options["timeout"]
    steps = DEFAULT_STEPS if options["steps"] is None else options["steps"]
    if budget <= 0 or timeout <= 0:
        raise UserError(f"--budget {budget:g} and --timeout {timeout:g} must be positive numbers of seconds")
    if not 1 <= steps <= MAX_STEPS:
        raise UserError(f"--steps {steps}: give a number of training steps from 1 to {MAX_STEPS}")
    return ZooRun(
        mode,
        options["backend"] or "eager",
        budget,
        timeout,
        options["optimizer"] or "adamw",
        steps,
        checked_device(options.get("device")),
        bool(options.get("amp")),
    )


def zoo_cases(run: ZooRun, cases: list[Case]) -> list[Case]:
    """The selected cases the mode runs: the generation mode takes the models that generate text
    (an error if none of those selected does)."""
    if run.mode != "generate":
        return cases
    from jitlab.capture.zoo.workloads import generates

    chosen = [case for case in cases if generates(case)]
    if not chosen:
        raise UserError(
            "none of the selected models generates text: --generate runs the decoder and encoder-decoder "
            "language models of the transformers zoo (e.g. --cases DistillGPT2,T5ForConditionalGeneration)"
        )
    return chosen


def zoo_mode_command(
    run: ZooRun,
    paths: list[str],
    cases: list[Case],
    details: bool,
    as_json: bool,
    collect: Callable[..., tuple[dict, Any]],
    envelope: Callable[[str, dict, dict], dict],
) -> int:
    """Run the mode on `cases` with a progress bar (`collect`, the capture command's), then print
    the tables or the JSON (`envelope(kind, by_machine, make)`)."""
    from jitlab.capture import training, varying
    from jitlab.capture.devices import describe

    chosen = zoo_cases(run, cases)
    if len(chosen) < len(cases):
        err_console.print(
            f"{len(cases) - len(chosen)} of the {len(cases)} selected models do not generate text: left out",
            highlight=False,
        )
    cases = chosen
    if run.mode == "train":
        names, labels = list(training.ARRANGEMENTS), training.SHORT
        run_local = lambda on_result: training.run_training(  # noqa: E731
            paths,
            cases,
            run.backend,
            run.optimizer,
            run.steps,
            run.budget_s,
            run.timeout_s,
            on_result=on_result,
            device=run.device,
            amp=run.amp,
        )
        build = lambda done, results: training.to_json(  # noqa: E731
            paths, done, results, run.backend, run.optimizer, run.steps, run.budget_s, describe(run.device),
            run.amp,
        )  # fmt: skip
    else:
        names, labels = list(varying.METHODS), varying.LABELS
        run_local = lambda on_result: varying.run_varying(  # noqa: E731
            paths, cases, run.mode, run.backend, run.budget_s, run.timeout_s, on_result=on_result,
            device=run.device,
        )  # fmt: skip
        build = lambda done, results: varying.to_json(  # noqa: E731
            paths, done, results, run.mode, run.backend, run.budget_s, describe(run.device)
        )
    on = ("" if run.device == "cpu" else f", {run.device}") + (", autocast bfloat16" if run.amp else "")
    by_machine, kept = collect(
        f"{run.mode} ({run.backend}{on})", cases, names, None, run_local, None, label=labels.get
    )
    make = kept.report(cases, names, build)
    if as_json:
        click.echo(json.dumps(envelope(f"capture-{run.mode}", by_machine, make), indent=1))
        return kept.exit_code(cases, names)
    results = by_machine[""]
    settings = {"backend": run.backend, "optimizer": run.optimizer, "steps": run.steps, "amp": run.amp}
    if run.device != "cpu":
        settings["device"] = describe(run.device)
    print_mode_tables(run.mode, kept.finished(cases, names, results), results, settings, details)
    return kept.exit_code(cases, names)


def print_mode_tables(
    mode: str, cases: list[Case], results: dict, settings: dict[str, Any], details: bool
) -> None:
    """The per-model table and the totals of a mode's results (one run's, or combined reports'):
    `settings` holds the backend, the device where it is not the CPU, and for training the optimizer
    and the steps."""
    from jitlab.capture import training, varying

    if settings.get("device", "cpu") != "cpu":
        console.print(f"models on {settings['device']}", highlight=False)
    if mode == "train":
        console.print(training.cases_table(cases, results))
        console.print(
            training.totals_table(
                cases,
                results,
                settings["backend"],
                settings["optimizer"],
                settings["steps"],
                bool(settings.get("amp")),
            )  # fmt: skip
        )
        lines = training.detail_lines(cases, results)
    else:
        console.print(varying.cases_table(cases, mode, results))
        console.print(varying.totals_table(cases, mode, results, settings["backend"]))
        lines = varying.detail_lines(cases, results)
    if details:
        for line in lines:
            console.print(line, highlight=False, markup=False)
    elif lines:
        err_console.print(
            f"{len(lines)} reason(s) and difference(s) not shown: --details lists them", highlight=False
        )


def combined_mode_command(
    paths: list[str], select: Callable[[list[Case]], list[Case]], details: bool, as_json: bool
) -> int:
    """`--combine` of `--shapes`, `--generate` or `--train` reports: one report of that mode, over
    the models `select` keeps (`--cases`)."""
    from jitlab.capture.combine_modes import combine_mode_reports, mode_json

    combined = combine_mode_reports(paths)
    cases = select(combined.cases)
    if as_json:
        click.echo(
            json.dumps(with_envelope(f"capture-{combined.mode}", mode_json(combined, cases)), indent=1)
        )
        return 0
    for source in combined.sources:
        console.print(
            f"{source['file']}: {source['cases']} models"
            + (" (interrupted)" if source["interrupted"] else ""),
            highlight=False,
        )
    print_mode_tables(combined.mode, cases, combined.results, combined.settings, details)
    return 0
