"""Combining the JSON reports of several `jitlab capture` runs into one (`jitlab capture --combine`).

A corpus as large as ParityBench runs in parts (by project letter, by method, and again for the cases
a fix touched), each part a `--json` report. Their sum is what a reader wants: every case once, with
its latest result for every method. Reports are read in the order given; a later report's result for
a (case, method) pair replaces an earlier one, so "the parts, then the re-runs" gives the latest
result of every case. A case that a report has no result for under some method is "not run" for that
method: it is left out of that method's denominator (the totals count, per method, the cases that
ran under it and work eagerly), and the per-case table shows `-`.

Coverage reports combine with coverage reports; the reports of `--shapes`, `--generate` and
`--train` with reports of their own mode (`combine_modes.py`). Speed reports (`--speed`) and reports
of cluster runs whose nodes each ran every case (`by_machine`) are refused with the reason, as is
anything that is not a capture report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitlab.capture.corpus import Case
from jitlab.errors import UserError

Results = dict[tuple[str, str], dict[str, Any]]

#: the result a (case, method) pair gets when no report combined has one
NOT_RUN: dict[str, Any] = {
    "captured": False,
    "full_graph": None,
    "equal": None,
    "error": "not in the combined reports",
    "unavailable": True,
    "not_run": True,
}
_SCHEMA = "jitlab.capture/"
_SPEED_SCHEMA = "jitlab.capture-speed/"
#: the schema of each zoo mode's report, without its version (combined by combine_modes.py)
MODE_SCHEMAS = {
    "jitlab.capture-shapes/": "shapes",
    "jitlab.capture-generate/": "generate",
    "jitlab.capture-train/": "train",
}


@dataclass
class Combined:
    """The cases of all reports (in order of first appearance), the methods (likewise), every
    (case, method) result (the latest), and what each report was."""

    cases: list[Case] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    results: Results = field(default_factory=dict)
    sources: list[dict[str, Any]] = field(default_factory=list)


def combine_reports(paths: list[str]) -> Combined:
    """Read the capture reports at `paths` (later ones win per case and method); bad input is a
    `UserError` naming the file and what to do."""
    if not paths:
        raise UserError(
            "--combine needs the JSON reports of earlier runs: jitlab capture --combine a.json b.json"
        )
    combined = Combined()
    by_name: dict[str, Case] = {}
    for path in paths:
        report = read_report(path)
        if not report["schema"].startswith(_SCHEMA):
            raise UserError(
                f"--combine {path} is a {report['schema'].split('/')[0]} report, {paths[0]} a coverage report: "
                "combine the reports of one kind"
            )
        if not isinstance(report.get("cases"), list) or not isinstance(report.get("methods"), list):
            raise UserError(f"--combine {path}: the report has no cases or methods (is it cut short?)")
        combined.sources.append(
            {
                "file": path,
                "cases": len(report["cases"]),
                "methods": list(report["methods"]),
                "jitlab_version": report.get("jitlab_version"),
                "project_commit": (report.get("machine") or {}).get("project_commit"),
                "python": (report.get("machine") or {}).get("python"),
                "torch": report.get("torch"),
                "interrupted": bool(report.get("interrupted")),
            }
        )
        for method in report["methods"]:
            if method not in combined.methods:
                combined.methods.append(method)
        for entry in report["cases"]:
            name = entry["name"]
            if name not in by_name:
                by_name[name] = stored_case(entry)
                combined.cases.append(by_name[name])
            for method, result in entry["results"].items():
                combined.results[(name, method)] = result
    for case in combined.cases:
        for method in combined.methods:
            combined.results.setdefault((case.name, method), NOT_RUN)
    return combined


def read_report(path: str) -> dict[str, Any]:
    """The capture report saved at `path` (coverage, or one of the zoo modes); a URL, a missing file,
    a file that is not a capture report, a speed report or a cluster report by machine is a
    `UserError`."""
    if "://" in path:
        raise UserError(
            f"--combine {path} looks like a URL: give the path of a JSON report saved with --json"
        )
    file = Path(path).expanduser()
    if not file.is_file():
        raise UserError(
            f"--combine {path}: no such file (give JSON reports saved with jitlab capture --json)"
        )
    try:
        report = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"--combine {path} is not a JSON report of jitlab capture: {exc}") from None
    schema = report.get("schema") if isinstance(report, dict) else None
    if not isinstance(schema, str) or not schema.startswith((_SCHEMA, *MODE_SCHEMAS)):
        if isinstance(schema, str) and schema.startswith(_SPEED_SCHEMA):
            raise UserError(
                f"--combine {path} is a speed report (--speed): its speed-ups are over the cases of one run "
                "and do not combine; run the cases together"
            )
        raise UserError(
            f"--combine {path} is not a report of jitlab capture (schema {schema!r}, expected {_SCHEMA}... "
            "or a --shapes, --generate or --train report): save one with jitlab capture ... --json"
        )
    if "by_machine" in report:
        raise UserError(
            f"--combine {path} holds one report per machine of a cluster run: combine the runs of one machine"
        )
    return report


def stored_case(entry: dict[str, Any]) -> Case:
    """A case known only by its stored result: its name, file and tags (it cannot be run again)."""

    def not_runnable() -> Any:
        raise UserError(f"{entry['name']} comes from a combined report: it cannot be run from there")

    return Case(
        name=entry["name"],
        make_model=not_runnable,
        make_inputs=not_runnable,
        tags=tuple(entry.get("tags") or ()),
        source=entry.get("source") or "",
    )


def combined_json(combined: Combined, cases: list[Case], methods: list[str]) -> dict[str, Any]:
    """The `--json` payload of `--combine`: the reports it read, then what a capture report holds,
    over the cases and methods chosen."""
    from jitlab.capture.report import results_json

    return {
        "combined_from": combined.sources,
        "methods": methods,
        **results_json(cases, methods, combined.results),
    }
