"""`jitlab capture --combine`: the JSON reports of several runs (parts of a corpus, other methods,
re-runs of some cases) reported as one, the latest result of every case and method. The reports are
made by real capture runs; one is then changed by hand to play a later re-run of a case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jitlab_testing import one_line_error, run_jitlab

REPO = Path(__file__).resolve().parents[2]
BASICS = str(REPO / "corpus" / "basics.py")


def _capture(tmp: Path, name: str, *args: str) -> Path:
    result = run_jitlab("capture", BASICS, *args, "--json", timeout=300)
    assert result.returncode == 0, result.stderr
    path = tmp / name
    path.write_text(result.stdout)
    return path


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("reports")
    return {
        "fx": _capture(tmp, "fx.json", "--cases", "mlp_class,linear_module", "--methods", "fx"),
        "jitlab": _capture(
            tmp, "jitlab.json", "--cases", "linear_module,mlp_sequential", "--methods", "jitlab"
        ),
    }


def _combined(*paths: Path, extra: tuple[str, ...] = ()) -> dict:
    result = run_jitlab("capture", "--combine", *map(str, paths), *extra, "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_every_case_once_and_each_method_over_the_cases_it_ran(reports):
    data = _combined(reports["fx"], reports["jitlab"])
    assert data["schema"].startswith("jitlab.capture/")
    assert [c["name"] for c in data["cases"]] == ["linear_module", "mlp_class", "mlp_sequential"]
    assert data["methods"] == ["fx", "jitlab"]
    by_name = {c["name"]: c["results"] for c in data["cases"]}
    assert set(by_name["linear_module"]) == {"fx", "jitlab"}
    assert set(by_name["mlp_class"]) == {"fx"} and set(by_name["mlp_sequential"]) == {"jitlab"}
    # a method's denominator holds only the cases some report ran under it
    assert data["totals"]["fx"]["cases"] == 2 and data["totals"]["jitlab"]["cases"] == 2
    assert data["totals"]["jitlab"]["captured"] == sum(
        r["jitlab"]["captured"] for r in by_name.values() if "jitlab" in r
    )
    assert [s["file"] for s in data["combined_from"]] == [str(reports["fx"]), str(reports["jitlab"])]


def test_a_later_report_replaces_an_earlier_result(reports, tmp_path):
    rerun = json.loads(reports["jitlab"].read_text())
    for case in rerun["cases"]:
        if case["name"] == "linear_module":
            case["results"]["jitlab"].update(captured=False, full_graph=False, note="played re-run")
    later = tmp_path / "rerun.json"
    later.write_text(json.dumps(rerun))
    assert _combined(reports["jitlab"], later)["totals"]["jitlab"]["captured"] == 1
    assert _combined(later, reports["jitlab"])["totals"]["jitlab"]["captured"] == 2
    narrowed = _combined(reports["fx"], later, extra=("--methods", "jitlab", "--cases", "linear*"))
    assert [c["name"] for c in narrowed["cases"]] == ["linear_module"] and narrowed["methods"] == ["jitlab"]


def test_the_tables_name_each_report_and_method(reports):
    result = run_jitlab("capture", "--combine", str(reports["fx"]), str(reports["jitlab"]), timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"{reports['fx']}: 2 cases, fx" in result.stdout
    assert "2/2" in result.stdout and "jitlab" in result.stdout


def test_bad_input_is_one_line_and_exit_2(reports, tmp_path):
    run_report = tmp_path / "run.json"
    run_report.write_text(json.dumps({"schema": "jitlab.run/1", "cells": []}))
    not_json = tmp_path / "notes.txt"
    not_json.write_text("not json")
    cases = [
        ((str(tmp_path / "missing.json"),), "no such file"),
        (("https://example.org/report.json",), "looks like a URL"),
        ((str(run_report),), "is not a report of jitlab capture"),
        ((str(not_json),), "is not a JSON report of jitlab capture"),
        ((str(reports["fx"]), "--methods", "dynamo"), "no report given has results of dynamo"),
        ((str(reports["fx"]), "--jobs", "2"), "--jobs do not apply to --combine"),
        ((), "--combine needs the JSON reports"),
    ]
    for args, message in cases:
        assert message in one_line_error(run_jitlab("capture", "--combine", *args, timeout=120)), args
