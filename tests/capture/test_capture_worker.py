"""The in-process pieces of a capture worker: one-line errors, verdicts and per-method results."""

from __future__ import annotations

from pathlib import Path

from jitlab.capture import load_corpora
from jitlab.capture.compare import state_paths
from jitlab.capture.worker import one_line, run_calls, run_method

REPO = Path(__file__).resolve().parents[2]
CASES = {c.name: c for c in load_corpora(sorted(str(p) for p in (REPO / "corpus").glob("*.py")))}


def test_errors_become_one_line():
    assert one_line(ValueError("first\nsecond")) == "ValueError: first"
    assert one_line(KeyError()) == "KeyError"
    script = RuntimeError(
        "The following operation failed in the TorchScript interpreter.\nf.py(1): g\nRuntimeError: why"
    )
    assert one_line(script).endswith("... RuntimeError: why")
    assert len(one_line(ValueError("x" * 1000))) <= 240


def _result(name: str, method: str) -> dict:
    case = CASES[name]
    reference = run_calls(case, "eager", 3, state_paths(case.build_model()))
    return run_method(case, method, reference, 3)


def test_jitlab_verdicts_follow_its_explain_report():
    mlp = _result("mlp_class", "jitlab")
    assert mlp["captured"] and mlp["graphs"] == 1
    # a branch on .item() whose arms run different layers: equal to eager, but specialised on the
    # outcome (arms with different graph inputs are not merged), so not one full graph
    item = _result("module_item_gate", "jitlab")
    assert item["equal"] is True and item["full_graph"] is False
    assert "specialised" in item["note"]
    # a branch on .item() in a plain function: both outcomes end in one graph
    merged = _result("item_branch", "jitlab")
    assert merged["captured"] and merged["equal"] is True and merged["full_graph"] is True
    # a counter attribute read by the program: new graphs after guard misses still count as full
    counter = _result("counter_used_in_output", "jitlab")
    assert counter["captured"] and counter["graphs"] >= 2


def test_a_program_missing_a_full_cache_is_not_captured():
    # a counter changes a guarded value on every call: after 8 captures the calls run eagerly (the
    # entries kept, not a fallback for good), which is no more a captured program than before
    case = CASES["counter_used_in_output"]
    reference = run_calls(case, "eager", 10, state_paths(case.build_model()))
    counter = run_method(case, "jitlab", reference, 10)
    assert counter["equal"] is True and not counter["captured"], counter
    assert counter["note"].startswith(
        "8 graph(s), 0 break(s), 0 fallback(s): cache limit reached (8 entries): 2 call(s)"
    )


def test_state_differences_are_found():
    # fx runs `self.counter += 1` once while tracing, never in the graph
    fx = _result("attribute_counter_increment", "fx")
    assert fx["full_graph"] is True and fx["equal"] is False
    assert fx["mismatch"] == "state counter: 1 instead of 3"
    # torch.jit.trace runs BatchNorm once while tracing: one running-statistics update too many
    trace = _result("batchnorm_train", "trace")
    assert trace["equal"] is False and "running_mean" in trace["mismatch"]
    # dynamo keeps BatchNorm's running statistics exactly as eager does
    assert _result("batchnorm_train", "dynamo")["captured"]
