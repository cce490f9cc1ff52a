"""`jitlab capture` end to end, as a user runs it: bad input, verdicts on known cases, and a
worker that crashes or hangs under one method costing only that method's result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jitlab_testing import one_line_error, run_jitlab

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "corpus"
DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere/missing.py"], "corpus file nowhere/missing.py does not exist"),
        (
            [str(DATA / "broken_corpus.py")],
            "failed to load at line 8: RuntimeError: this corpus is broken on purpose",
        ),
        ([str(DATA / "no_corpus.py")], "defines no CORPUS"),
        ([str(CORPUS / "basics.py"), "--methods", "fx,magic"], "unknown capture method magic"),
        ([str(CORPUS / "basics.py"), "--cases", "no_such_case"], "no case matches 'no_such_case'"),
        ([str(CORPUS / "basics.py"), "--timeout", "0"], "--timeout 0 is not a positive number"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    assert message in one_line_error(run_jitlab("capture", *args, timeout=120))


@pytest.fixture(scope="module")
def verdicts() -> dict:
    files = [str(CORPUS / name) for name in ("basics.py", "control_flow.py", "data_dependent.py")]
    cases = "mlp_class,item_branch,branch_on_shape,tensor_bool_branch,nonzero_gather"
    result = run_jitlab("capture", *files, "--cases", cases, "--json", timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_json_has_every_case_method_and_totals(verdicts):
    assert verdicts["methods"] == ["jitlab", "dynamo", "export", "fx", "script", "trace"]
    assert [c["name"] for c in verdicts["cases"]] == [
        "mlp_class", "branch_on_shape", "item_branch", "tensor_bool_branch", "nonzero_gather",
    ]  # fmt: skip
    for case in verdicts["cases"]:
        for result in case["results"].values():
            assert set(result) >= {"full_graph", "equal", "captured", "error"}
            assert result["captured"] == bool(result["full_graph"] and result["equal"])
    dynamo = verdicts["totals"]["dynamo"]
    assert dynamo["cases"] == 5
    assert dynamo["captured"] == sum(c["results"]["dynamo"]["captured"] for c in verdicts["cases"])
    assert dynamo["rate"] == pytest.approx(dynamo["captured"] / 5)


def _result(verdicts, case, method):
    return next(c for c in verdicts["cases"] if c["name"] == case)["results"][method]


def test_a_plain_mlp_is_captured_by_every_tool(verdicts):
    for method in ("dynamo", "export", "fx", "script", "trace"):
        result = _result(verdicts, "mlp_class", method)
        assert result["captured"], (method, result)
        assert result["error"] is None


def test_known_failures_are_found(verdicts):
    # fx cannot branch on a traced value, not even a shape
    assert "control flow" in _result(verdicts, "branch_on_shape", "fx")["error"]
    assert not _result(verdicts, "item_branch", "fx")["captured"]
    # dynamo's fullgraph mode stops at a branch on .item() and on a tensor's truth value
    for case in ("item_branch", "tensor_bool_branch"):
        result = _result(verdicts, case, "dynamo")
        assert result["full_graph"] is False and result["error"], result
    # trace gives one graph but silently specialises the branch: the later calls differ from eager
    trace = _result(verdicts, "item_branch", "trace")
    assert trace["full_graph"] is True and trace["equal"] is False
    assert "call" in trace["mismatch"] and "values differ" in trace["mismatch"]
    # a shape-only branch is fine for trace with fixed shapes, and for dynamo and export
    for method in ("trace", "dynamo", "export"):
        assert _result(verdicts, "branch_on_shape", method)["captured"], method


def test_crash_hang_and_broken_case_cost_only_themselves():
    result = run_jitlab(
        "capture", str(DATA / "misbehaving_corpus.py"), "--methods", "fx,trace,script", "--timeout", "10",
        "--json", timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    cases = {c["name"]: c["results"] for c in report["cases"]}
    assert "worker exited with code 3" in cases["crash_under_fx"]["fx"]["error"]
    assert cases["crash_under_fx"]["trace"]["captured"]  # the methods after the crash still ran
    assert "script" in cases["crash_under_fx"]
    assert "no result after 10 s" in cases["hang_under_trace"]["trace"]["error"]
    assert cases["hang_under_trace"]["fx"]["captured"]
    assert (
        cases["hang_under_trace"]["script"]["error"] is None
        or "no result" not in cases["hang_under_trace"]["script"]["error"]
    )
    for method in ("fx", "trace", "script"):
        broken = cases["fails_eagerly"][method]
        assert broken["broken_case"] and "eager run failed: ValueError: broken on purpose" in broken["error"]
    assert cases["plain_after_trouble"]["trace"]["captured"]
    assert report["broken"] == ["fails_eagerly"]
    assert report["totals"]["fx"]["cases"] == 3  # the broken case is left out of the rates


def test_table_output_names_every_method():
    result = run_jitlab(
        "capture", str(CORPUS / "basics.py"), "--cases", "linear_module", "--methods", "fx,script"
    )
    assert result.returncode == 0, result.stderr
    assert "fx" in result.stdout and "script" in result.stdout and "1/1" in result.stdout
