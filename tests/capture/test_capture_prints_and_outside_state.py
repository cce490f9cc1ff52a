"""What every call printed and the case's outside state after every call are part of "equal to
eager": a tool that drops a print or an outside write on some call is caught on that call."""

from __future__ import annotations

from pathlib import Path

import torch

from jitlab.capture import Case, load_corpora
from jitlab.capture.compare import state_paths
from jitlab.capture.worker import compare_runs, printed_difference, run_calls, run_method

REPO = Path(__file__).resolve().parents[2]
CASES = {c.name: c for c in load_corpora(sorted(str(p) for p in (REPO / "corpus").glob("*.py")))}


def _result(case: Case, method: str) -> dict:
    reference = run_calls(case, "eager", 3, state_paths(case.build_model()))
    return run_method(case, method, reference, 3)


def test_each_calls_prints_are_recorded():
    case = CASES["print_inside_forward"]
    run = run_calls(case, "eager", 3, [])
    assert run["printed"] == ["forward called with batch 2\n"] * 3


def test_a_print_a_tool_drops_is_a_difference_on_the_first_call():
    # torch.jit.trace runs the print once while tracing; the traced calls print nothing
    trace = _result(CASES["print_inside_forward"], "trace")
    assert trace["equal"] is False
    assert trace["mismatch"] == "call 1 printed line 1: '<nothing>' instead of 'forward called with batch 2'"
    # jitlab.jit replays the print after its graph: the same text on every call
    assert _result(CASES["print_inside_forward"], "jitlab")["equal"] is True


def test_prints_that_depend_on_data_are_compared_per_call():
    def program(x):
        y = x * 2
        print("mean", round(y.mean().item(), 3))
        return y

    case = Case("prints_data", lambda: program, lambda: ((torch.randn(3),), {}))
    reference = run_calls(case, "eager", 3, [])
    assert len(set(reference["printed"])) == 3  # new inputs every call: three different lines
    traced = run_calls(case, "trace", 3, [])  # prints nothing on its calls
    assert compare_runs(reference, traced).startswith("call 1 printed line 1: '<nothing>' instead of 'mean ")
    assert compare_runs(reference, run_calls(case, "jitlab", 3, [])) is None


def test_outside_state_is_compared_after_every_call():
    # trace appends to the global list once while tracing (a traced size: a tensor), never on a call
    trace = _result(CASES["append_to_global_list"], "trace")
    assert trace["equal"] is False
    assert trace["mismatch"] == "call 1 observed state[0]: Tensor instead of int"
    # fx appends a Proxy of the size while tracing: the list is wrong from the first call on too
    fx = _result(CASES["append_to_global_list"], "fx")
    assert fx["equal"] is False and fx["mismatch"].startswith("call 1 observed state")
    run = run_calls(CASES["append_to_global_list"], "eager", 3, [])
    assert run["observed"] == [[3], [3, 3], [3, 3, 3]]


def test_printed_difference_names_the_first_differing_line():
    assert printed_difference("a\nb\n", "a\nc\n") == "line 2: 'c' instead of 'b'"
    assert printed_difference("a\nb\n", "a\n") == "line 2: '<nothing>' instead of 'b'"
    assert printed_difference("a\n", "a\nextra\n") == "line 2: 'extra' instead of '<nothing>'"
    assert printed_difference("a\n", "a") == "'a' instead of 'a\\n'"
    long = "x" * 200
    assert printed_difference(long, "y") == f"line 1: 'y' instead of '{'x' * 77}...'"
