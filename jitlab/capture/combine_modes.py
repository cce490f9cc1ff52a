"""Combining the JSON reports of `jitlab capture --zoo ... --shapes | --generate | --train` runs
(`jitlab capture --combine`).

The whole zoo in one of these modes takes hours on a small machine, so it runs in parts (`--cases`),
and a model is run again after a fix. As with coverage reports (`combine.py`), reports are read in
the order given and a later report's result for a (model, method) pair replaces an earlier one; the
totals and the tables are then computed afresh over the combined results, exactly as for one run.

Reports combine only when they measured the same thing: the same mode, backend and device, and for
training the same optimizer and number of steps. Anything else is refused with the setting that
differs, since a total over them would mix two experiments. Steady-state budgets may differ (a
re-run with a larger budget is common); each report's budget is kept in `combined_from`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jitlab.capture.combine import MODE_SCHEMAS, read_report, stored_case
from jitlab.capture.corpus import Case
from jitlab.errors import UserError

Results = dict[tuple[str, str], dict[str, Any]]

#: the settings two reports of a mode must share to be combined
_SHARED = {
    "shapes": ("backend", "device"),
    "generate": ("backend", "device"),
    "train": ("backend", "device", "optimizer", "steps", "amp"),
}

#: the result a (model, method) pair gets when no report combined has one
NOT_RUN: dict[str, Any] = {"error": "not in the combined reports", "equal": None, "not_run": True}


def report_mode(report: dict[str, Any]) -> str | None:
    """The zoo mode of a capture report, or None for a coverage or speed report."""
    schema = report.get("schema")
    if not isinstance(schema, str):
        return None
    return next((mode for prefix, mode in MODE_SCHEMAS.items() if schema.startswith(prefix)), None)


@dataclass
class CombinedMode:
    """The models of all reports (in order of first appearance), every (model, method) result (the
    latest), the settings the reports share, and what each report was."""

    mode: str
    settings: dict[str, Any]
    methods: list[str]
    cases: list[Case] = field(default_factory=list)
    corpora: list[str] = field(default_factory=list)
    results: Results = field(default_factory=dict)
    sources: list[dict[str, Any]] = field(default_factory=list)


def combine_mode_reports(paths: list[str], reports: list[dict[str, Any]] | None = None) -> CombinedMode:
    """Read the mode reports at `paths` (or take them already read) and combine them; bad input is a
    `UserError` naming the file and what to do."""
    reports = reports if reports is not None else [read_report(path) for path in paths]
    first_mode = report_mode(reports[0])
    if first_mode is None:
        raise UserError(f"--combine {paths[0]} is not a report of --shapes, --generate or --train")
    settings = {key: _setting(reports[0], key) for key in _SHARED[first_mode]}
    combined = CombinedMode(first_mode, settings, methods=_methods(first_mode))
    by_name: dict[str, Case] = {}
    for path, report in zip(paths, reports):
        mode = report_mode(report)
        if mode != first_mode:
            kind = f"a --{mode} report" if mode else "not a --shapes, --generate or --train report"
            raise UserError(
                f"--combine {path} is {kind}, {paths[0]} a --{first_mode} report: combine the reports of one mode"
            )
        for key, value in settings.items():
            if _setting(report, key) != value:
                raise UserError(
                    f"--combine {path} ran with {key} {_setting(report, key)!r}, {paths[0]} with {value!r}: "
                    "combine the reports of one experiment (the same backend, device, optimizer and steps)"
                )
        combined.sources.append(_source(path, report))
        combined.corpora.extend(c for c in report.get("corpora") or () if c not in combined.corpora)
        for entry in report.get("cases") or ():
            name = entry["name"]
            if name not in by_name:
                by_name[name] = stored_case(entry)
                combined.cases.append(by_name[name])
            for method, result in (entry.get("results") or {}).items():
                combined.results[(name, method)] = result
    for case in combined.cases:
        for method in combined.methods:
            combined.results.setdefault((case.name, method), NOT_RUN)
    return combined


def mode_json(combined: CombinedMode, cases: list[Case]) -> dict[str, Any]:
    """The `--json` payload of a combined mode report: the reports it read, then what one run's
    report of that mode holds, totals computed over the combined results."""
    from jitlab.capture import training, varying

    settings, budget = combined.settings, combined.sources[-1]["budget_s"]
    if combined.mode == "train":
        payload = training.to_json(
            combined.corpora, cases, combined.results, settings["backend"], settings["optimizer"],
            settings["steps"], budget, settings["device"], bool(settings.get("amp")),
        )  # fmt: skip
    else:
        payload = varying.to_json(
            combined.corpora, cases, combined.results, combined.mode, settings["backend"], budget,
            settings["device"],
        )  # fmt: skip
    return {"combined_from": combined.sources, **payload}


def _methods(mode: str) -> list[str]:
    from jitlab.capture import training, varying

    return list(training.ARRANGEMENTS if mode == "train" else varying.METHODS)


def _setting(report: dict[str, Any], key: str) -> Any:
    """A report's setting; reports made before `--device` existed ran on the CPU, and those made
    before `--amp` in float32."""
    value = report.get(key)
    if value is None:
        return {"device": "cpu", "amp": False}.get(key)
    return value


def _source(path: str, report: dict[str, Any]) -> dict[str, Any]:
    machine = report.get("machine") or {}
    return {
        "file": path,
        "cases": len(report.get("cases") or ()),
        "budget_s": report.get("budget_s"),
        "jitlab_version": report.get("jitlab_version"),
        "project_commit": machine.get("project_commit"),
        "python": machine.get("python"),
        "torch": report.get("torch"),
        "interrupted": bool(report.get("interrupted")),
    }
