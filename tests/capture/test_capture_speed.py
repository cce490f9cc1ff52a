"""`jitlab capture --speed`: structure and values of the speed report (never which method is faster),
the totals' arithmetic on known numbers, and bad options."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from jitlab_testing import run_jitlab

from jitlab.capture.corpus import Case, load_corpus
from jitlab.capture.speed import bootstrap_ci, geometric_mean, left_out, totals
from jitlab.capture.speed_worker import STEADY_CALL, run_case
from jitlab.engine.spec import TimingPolicy

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "corpus"
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def report() -> dict:
    files = [str(CORPUS / "basics.py"), str(CORPUS / "modules.py"), str(DATA / "misbehaving_corpus.py")]
    result = run_jitlab(
        "capture", *files, "--speed", "--backend", "eager", "--budget", "0.05",
        "--cases", "mlp_class,batchnorm_train,fails_eagerly", "--json", timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_every_case_has_eager_jitlab_and_compile_results(report):
    assert report["backend"] == "eager" and report["budget_s"] == 0.05
    assert [c["name"] for c in report["cases"]] == ["mlp_class", "batchnorm_train", "fails_eagerly"]
    for case in report["cases"][:2]:
        assert set(case["results"]) == {"eager", "jitlab", "compile"}
        for method, result in case["results"].items():
            assert result["error"] is None, (case["name"], method, result)
            assert result["equal"] is True, (case["name"], method, result)
            assert result["first_call_s"] > 0 and result["median_s"] > 0
            assert result["ci_low_s"] <= result["median_s"] <= result["ci_high_s"]
            assert result["samples"] >= 1 and result["loops"] >= 1
        for method in ("jitlab", "compile"):
            assert case["results"][method]["graphs"] >= 1
            expected = case["results"]["eager"]["median_s"] / case["results"][method]["median_s"]
            assert case["speedup"][method] == pytest.approx(expected)


def test_a_case_that_fails_eagerly_is_left_out(report):
    broken = report["cases"][2]["results"]
    for method in ("eager", "jitlab", "compile"):
        assert broken[method]["broken_case"]
        assert "eager run failed: ValueError: broken on purpose" in broken[method]["error"]
    assert report["left_out"] == [
        {"case": "fails_eagerly", "method": "eager", "reason": broken["eager"]["error"]}
    ]


def test_totals_are_over_the_cases_where_all_ran(report):
    t = report["totals"]
    assert (t["cases"], t["both_ok"], t["left_out"]) == (3, 2, 1)
    for method in ("jitlab", "compile"):
        speedups = [c["speedup"][method] for c in report["cases"][:2]]
        assert t[method]["geomean_speedup"] == pytest.approx(math.sqrt(speedups[0] * speedups[1]))
        assert t[method]["ci_low"] <= t[method]["geomean_speedup"] <= t[method]["ci_high"]
        firsts = [c["results"][method]["first_call_s"] for c in report["cases"][:2]]
        assert t[method]["median_first_call_s"] == pytest.approx(sum(firsts) / 2)
        assert t[method]["ok"] == 2


def _off_by_a_little(graph_module, example_inputs):
    """A backend whose compiled code adds 1e-3 to every floating-point output: wrong on every call."""

    def shift(value):
        return value + 1e-3 if isinstance(value, torch.Tensor) and value.is_floating_point() else value

    def run(*args):
        outputs = graph_module(*args)
        return type(outputs)(map(shift, outputs)) if isinstance(outputs, (tuple, list)) else shift(outputs)

    return run


def test_compiled_code_is_compared_after_the_warm_calls_for_both_jits():
    """jitlab.jit's first call runs the program itself while capturing it, so its output is eager's
    whatever the backend computes: only a later call shows the compiled code's result."""
    case = next(c for c in load_corpus(CORPUS / "basics.py") if c.name == "mlp_class")
    events: list[dict] = []
    policy = TimingPolicy(budget_s=0.02, min_block_s=0.001, min_samples=2, target_ci=0.5)
    run_case(case, ["eager", "jitlab", "compile"], _off_by_a_little, policy, events.append)
    done = {e["method"]: e["result"] for e in events if e["event"] == "done"}
    assert done["eager"]["equal"] is True
    assert done["jitlab"]["equal"] is False and done["jitlab"]["graphs"] == 1
    assert done["jitlab"]["mismatch"].startswith(f"output of call {STEADY_CALL}:"), done["jitlab"]
    assert done["compile"]["equal"] is False
    assert done["compile"]["mismatch"].startswith("first call output"), done["compile"]


def _case(name: str) -> Case:
    return Case(name, make_model=lambda: None, make_inputs=lambda: ((), {}))


def _timed(median: float, first: float = 1.0, **extra) -> dict:
    return {"median_s": median, "first_call_s": first, "equal": True, "error": None, **extra}


def test_totals_on_known_numbers():
    cases = [_case("a"), _case("b"), _case("c"), _case("d")]
    results = {
        ("a", "eager"): _timed(4.0), ("a", "jitlab"): _timed(1.0, 3.0), ("a", "compile"): _timed(2.0, 5.0),
        ("b", "eager"): _timed(1.0), ("b", "jitlab"): _timed(1.0, 1.0), ("b", "compile"): _timed(2.0, 7.0),
        ("c", "eager"): _timed(1.0), ("c", "jitlab"): _timed(1.0, equal=False, mismatch="values differ"),
        ("c", "compile"): _timed(1.0),
        ("d", "eager"): _timed(1.0), ("d", "jitlab"): _timed(1.0),
        ("d", "compile"): {"equal": None, "error": "BackendCompilerFailed: boom"},
    }  # fmt: skip
    t = totals(cases, results)
    assert (t["both_ok"], t["left_out"]) == (2, 2)
    assert t["jitlab"]["geomean_speedup"] == pytest.approx(2.0)  # sqrt(4 * 1)
    assert t["compile"]["geomean_speedup"] == pytest.approx(1.0)  # sqrt(2 * 0.5)
    assert t["jitlab"]["median_first_call_s"] == pytest.approx(2.0)
    assert t["compile"]["median_first_call_s"] == pytest.approx(6.0)
    assert t["jitlab"]["faster_than_eager"] == 1 and t["compile"]["faster_than_eager"] == 1
    assert t["jitlab"]["ok"] == 3 and t["compile"]["ok"] == 3
    assert t["jitlab_over_compile"]["geomean"] == pytest.approx(2.0)  # sqrt(2 * 2)
    assert left_out(cases, results) == [
        {"case": "c", "method": "jitlab", "reason": "values differ"},
        {"case": "d", "method": "compile", "reason": "BackendCompilerFailed: boom"},
    ]


def test_geometric_mean_and_bootstrap_interval():
    assert geometric_mean([]) is None
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert bootstrap_ci([3.0]) is None
    low, high = bootstrap_ci([1.0, 2.0, 4.0, 8.0])
    assert 1.0 <= low <= geometric_mean([1.0, 2.0, 4.0, 8.0]) <= high <= 8.0
    assert bootstrap_ci([2.0] * 5) == pytest.approx((2.0, 2.0))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--speed", "--methods", "fx"], "--methods and --jobs do not apply to --speed"),
        (["--speed", "--jobs", "2"], "--methods and --jobs do not apply to --speed"),
        (["--speed", "--budget", "0"], "must be positive numbers of seconds"),
        (["--backend", "eager"], "--backend, --budget and --device apply only to --speed"),
    ],
)
def test_bad_speed_options_are_one_line_and_exit_2(args, message):
    result = run_jitlab("capture", str(CORPUS / "basics.py"), *args, timeout=120)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_interleaved_methods_share_one_loop_count():
    """The first call of a block runs after another method's block: every method gets as many calls
    per block, so that call weighs the same in each; a method whose block would outgrow its share of
    the budget keeps fewer. Known per-call times, so load cannot change the answer."""
    from jitlab.capture.speed_worker import common_loops

    policy = TimingPolicy(budget_s=0.2, min_block_s=0.004, min_samples=5, target_ci=0.5)
    per_call = {"fast": 0.0005, "slow": 0.002}
    assert common_loops({"fast": 8, "slow": 2}, per_call, policy) == {"fast": 8, "slow": 8}
    policy = TimingPolicy(budget_s=0.05, min_block_s=0.004, min_samples=5, target_ci=0.5)
    per_call = {"fast": 0.0005, "slow": 0.02}
    assert common_loops({"fast": 8, "slow": 1}, per_call, policy) == {"fast": 8, "slow": 1}
