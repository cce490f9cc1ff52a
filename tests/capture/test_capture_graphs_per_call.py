"""Graphs per call in `jitlab capture`: jitlab.jit's graph breaks and TorchDynamo's with
`fullgraph=False`, per case and summed up; and every program with graph breaks equal to eager."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jitlab_testing import run_jitlab

from jitlab.capture import Case, load_corpora
from jitlab.capture.compare import state_paths
from jitlab.capture.report import graphs_lines, graphs_summary
from jitlab.capture.worker import compare_runs, run_calls, run_method

REPO = Path(__file__).resolve().parents[2]
BREAKS = sorted(str(p) for p in (REPO / "corpus" / "breaks").glob("*.py"))
CASES = load_corpora(BREAKS)
BY_NAME = {c.name: c for c in CASES}


# wrong results of jitlab.jit on the break corpus, reduced to minimal programs in
# tests/jit/test_jit_data_escapes_known_wrong.py (issue 22): strict, so a fix shows up here
KNOWN_WRONG: dict[str, str] = {}
# what issue 22 asks the break corpus to cover, as tags that at least one case must carry
REQUIRED_BREAK_TAGS = {
    "numpy", "round-trip", "tolist", "item", "int", "float", "bool", "print", "iterate", "logging",
    "mutation-read", "accumulate", "early-return", "exception", "generator", "with", "loop", "call",
    "resume", "list", "dict", "set", "attribute",
}  # fmt: skip


def _marked(case: Case):
    if case.name in KNOWN_WRONG:
        return pytest.param(case, marks=pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[case.name]))
    return case


def test_break_corpus_is_large_and_covers_every_kind_of_data_escape():
    assert len(CASES) >= 36  # 6 call and data breaks, and at least 30 data escapes (issue 22)
    assert set(KNOWN_WRONG) <= set(BY_NAME)
    tags = {tag for case in CASES for tag in case.tags}
    assert REQUIRED_BREAK_TAGS <= tags, f"no case tagged {sorted(REQUIRED_BREAK_TAGS - tags)}"


# calls per program: more than the JIT's 8 cache entries, so that an outcome seen before comes back
# (a wrong entry is reused) and a program that keeps missing its guards reaches the cache limit
CALLS = 12


@pytest.mark.parametrize("case", [_marked(c) for c in CASES], ids=lambda c: c.name)
def test_programs_with_graph_breaks_equal_eager_over_twelve_calls(case: Case):
    paths = state_paths(case.build_model())
    reference = run_calls(case, "eager", CALLS, paths)
    assert compare_runs(reference, run_calls(case, "eager", CALLS, paths)) is None  # deterministic
    run = run_calls(case, "jitlab", CALLS, paths)
    assert compare_runs(reference, run) is None  # outputs, prints, state, inputs, outside containers
    report = run["captured"].call.explain()
    if case.source.endswith("graph_breaks.py") and "class-statement" not in case.tags:  # split by every tool
        assert report.graph_breaks or report.fallbacks  # split, or said why it ran eagerly
    else:  # data escapes: one graph, several, or eager with the reason
        assert report.graphs or report.fallbacks


def _result(name: str, method: str) -> dict:
    case = BY_NAME[name]
    reference = run_calls(case, "eager", 3, state_paths(case.build_model()))
    return run_method(case, method, reference, 3)


def test_a_program_split_by_a_break_runs_two_graphs_per_call_and_is_not_one_graph():
    result = _result("disabled_helper_between_layers", "jitlab")
    assert result["equal"] is True and result["full_graph"] is False and not result["captured"]
    assert result["graphs_per_call"] == 2
    assert "graph break at" in result["note"] and "halve is marked torch.compiler.disable" in result["note"]
    dynamo = _result("disabled_helper_between_layers", "dynamo")
    assert dynamo["full_graph"] is False and dynamo["graphs_per_call"] >= 2


def test_a_class_statement_in_every_block_of_a_loop_is_interpreted_where_dynamo_breaks():
    result = _result("opaque_step_in_every_block", "jitlab")
    assert result["equal"] is True and result["graphs_per_call"] == 1 and result["full_graph"] is True
    dynamo = _result("opaque_step_in_every_block", "dynamo")
    assert dynamo["graphs_per_call"] >= 2


def _case(name: str) -> Case:
    return Case(name, make_model=lambda: None, make_inputs=lambda: ((), {}))


def test_graphs_summary_on_known_numbers():
    cases = [_case(n) for n in "abcde"]
    counts = {"a": 1, "b": 3, "c": 0, "d": 2, "e": None}
    results = {(n, "jitlab"): {"graphs_per_call": k} for n, k in counts.items()}
    results.update({(n, "fx"): {"graphs_per_call": None} for n in counts})
    results[("e", "jitlab")]["broken_case"] = True
    summary = graphs_summary(cases, ["jitlab", "fx"], results)
    assert list(summary) == ["jitlab"]  # fx does not count graphs per call
    assert summary["jitlab"] == {"cases": 4, "mean": 1.5, "median": 1.5, "with_breaks": 2, "no_graph": 1}
    assert graphs_lines(cases, ["jitlab"], results) == [
        "b: graphs per call: jitlab 3",
        "c: graphs per call: jitlab 0",
        "d: graphs per call: jitlab 2",
    ]


def test_json_and_tables_report_graphs_per_call():
    result = run_jitlab(
        "capture", *BREAKS, "--methods", "jitlab,dynamo", "--cases", "disabled_helper_between_layers,library*",
        "--json", timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    summary = data["graphs_per_call"]
    assert set(summary) == {"jitlab", "dynamo"}
    per_case = [c["results"]["jitlab"]["graphs_per_call"] for c in data["cases"]]
    assert summary["jitlab"]["mean"] == pytest.approx(sum(per_case) / len(per_case))
    text = run_jitlab(
        "capture", *BREAKS, "--methods", "jitlab", "--cases", "disabled_helper_between_layers", "--details",
        timeout=300,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "disabled_helper_between_layers: graphs per call: jitlab 2" in text.stdout
    assert "graphs per call" in text.stdout and "more than one graph" in text.stdout
