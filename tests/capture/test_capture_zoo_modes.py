"""`jitlab capture --zoo --shapes | --generate | --train`: zoo models on varying inputs, in generate()
and in training steps, jitlab.jit beside torch.compile, each call and step against eager.

A few small models per mode with backend "eager" (the whole zoo is the command in docs/capture.md).
The tests assert what must hold whatever jitlab.jit's state: every call and token equal to eager,
counts that add up, fallbacks that say why, bitwise training where nothing was compiled. Never times.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch
from jitlab_testing import one_line_error, run_jitlab

from jitlab.capture.corpus import load_corpus
from jitlab.capture.train_worker import against_eager
from jitlab.capture.zoo import HERE, ZOOS, library_problem, workloads
from jitlab.cli.capture_zoo_cmd import check_zoo_run
from jitlab.errors import UserError

CI = os.environ.get("CI") == "true"


def _needs(library: str) -> None:
    problem = library_problem(library)
    if problem is not None:
        if CI and (library == "transformers" or sys.version_info >= (3, 12)):
            pytest.fail(f"CI must run the zoo's modes: {problem}")
        pytest.skip(problem)


@pytest.fixture(scope="module")
def transformers_cases() -> dict:
    return {case.name: case for case in load_corpus(HERE / ZOOS["transformers"][0])}


def _run(mode: str, cases: str, *extra: str) -> dict:
    result = run_jitlab(
        "capture", "--zoo", "transformers", f"--{mode}", "--cases", cases, "--backend", "eager",
        "--budget", "0.01", *extra, "--json", timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["mode"] == mode and report["backend"] == "eager"
    return report


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shapes"], "--shapes runs zoo models: add --zoo transformers"),
        (["--zoo", "transformers", "--shapes", "--train"], "--shapes and --train are separate runs"),
        (["--zoo", "transformers", "--train", "--steps", "0"], "--steps 0: give a number of training steps"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args, message):
    assert message in one_line_error(run_jitlab("capture", *args, timeout=120))


@pytest.mark.parametrize(
    ("mode", "refused", "options", "message"),
    [
        ("generate", {"--methods": "jitlab"}, {}, "--methods do not apply to --generate"),
        ("train", {"corpus files": ("corpus/basics.py",)}, {}, "corpus files do not apply to --train"),
        ("shapes", {}, {"optimizer": "sgd"}, "--optimizer, --steps and --amp apply only to --train"),
        ("generate", {}, {"amp": True}, "--optimizer, --steps and --amp apply only to --train"),
        ("train", {}, {"budget": 0.0}, "must be positive numbers of seconds"),
        ("train", {}, {"steps": 101}, "--steps 101: give a number of training steps from 1 to 100"),
    ],
)
def test_options_that_do_not_apply_are_refused(mode, refused, options, message):
    given = {"backend": None, "budget": None, "timeout": None, "optimizer": None, "steps": None, **options}
    with pytest.raises(UserError, match=message):
        check_zoo_run(mode, True, refused, given)


def test_defaults_of_a_zoo_run():
    run = check_zoo_run(
        "train",
        True,
        {"--methods": None},
        dict.fromkeys(("backend", "budget", "timeout", "optimizer", "steps")),
    )
    assert (run.backend, run.optimizer, run.steps, run.budget_s, run.timeout_s) == (
        "eager",
        "adamw",
        5,
        0.5,
        300.0,
    )


# --- the workloads ------------------------------------------------------------------------------


def test_workloads_vary_shapes_and_prompts_and_draw_the_same_values_every_time(transformers_cases):
    _needs("transformers")
    gpt2, vit, t5 = (
        transformers_cases[n]
        for n in ("DistillGPT2", "ViTForImageClassification", "T5ForConditionalGeneration")
    )
    calls = workloads.shape_inputs(gpt2)
    shapes = [tuple(kwargs["input_ids"].shape) for _, (_, kwargs) in calls]
    assert shapes == list(workloads.TEXT_SHAPES) and shapes[0] == (2, 5) and shapes[-1] == (4, 50)
    again = workloads.shape_inputs(gpt2)
    assert all(torch.equal(a[1][1]["input_ids"], b[1][1]["input_ids"]) for a, b in zip(calls, again))
    images = [kwargs["pixel_values"].shape for _, (_, kwargs) in workloads.shape_inputs(vit)]
    assert (
        len(images) == 15
        and {s[0] for s in images} == {1, 2, 3, 4, 5}
        and {s[-1] for s in images} == {32, 48, 64}
    )
    decoder = workloads.shape_inputs(t5)[-1][1][1]["decoder_input_ids"]
    assert tuple(decoder.shape) == (4, 25)  # an encoder-decoder's decoder half as long
    prompts = workloads.generate_calls(t5)
    assert [length for length, _ in prompts] == list(workloads.PROMPT_LENGTHS)
    assert all(k["min_new_tokens"] == k["max_new_tokens"] == workloads.NEW_TOKENS for _, k in prompts)
    assert workloads.generate_calls(vit) is None and not workloads.generates(
        transformers_cases["BertForMaskedLM"]
    )


def test_training_models_have_no_dropout_and_start_alike(transformers_cases):
    _needs("transformers")
    case = transformers_cases["BartForConditionalGeneration"]
    model, again = workloads.train_model(case), workloads.train_model(case)
    assert model.training
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            assert module.p == 0.0
        for name, value in vars(module).items():
            if "drop" in name.lower() and isinstance(value, float):
                assert value == 0.0, (type(module).__name__, name)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))
    batches = workloads.train_batches(case, 3)
    assert set(batches[0]) == {"input_ids", "labels"} and not torch.equal(
        batches[0]["labels"], batches[1]["labels"]
    )
    assert workloads.loss_kind(transformers_cases["T5Small"]) == "output"


def test_against_eager_tells_bitwise_from_close_from_different():
    losses = [torch.tensor(1.0), torch.tensor(2.0)]
    states = [{"w": torch.ones(3), "n": torch.tensor(1)}, {"w": torch.full((3,), 2.0), "n": torch.tensor(2)}]
    same = against_eager((losses, states), ([x.clone() for x in losses], [dict(s) for s in states]))
    assert same == {
        "bitwise_steps": 2,
        "max_loss_diff": 0.0,
        "max_param_diff": 0.0,
        "equal": True,
        "bitwise": True,
    }
    nudged = [states[0], {"w": torch.tensor([2.0, 2.0, 2.0 + 2**-22]), "n": torch.tensor(2)}]
    close = against_eager((losses, states), (losses, nudged))
    assert (close["bitwise"], close["equal"], close["bitwise_steps"]) == (False, True, 1)
    assert close["max_param_diff"] == pytest.approx(2**-22) and close["first_difference"].startswith(
        "step 2: w differs"
    )
    far = against_eager((losses, states), ([losses[0], torch.tensor(2.5)], states))
    assert (far["equal"], far["max_loss_diff"], far["first_difference"]) == (
        False,
        0.5,
        "step 2: loss differs by 0.5",
    )


# --- the modes on small models, backend eager ---------------------------------------------------


def _check_counts_add_up(result: dict, calls: int) -> None:
    assert result["error"] is None, result
    assert result["equal"] is True and result["equal_calls"] == calls, result.get("mismatch")
    assert len(result["served"]) == len(result["new_graphs"]) == calls
    assert result["per_call_s"] > 0 and result["first_pass_s"] > 0


@pytest.mark.slow
def test_shapes_every_call_equal_to_eager_and_counts_that_add_up(transformers_cases):
    _needs("transformers")
    report = _run("shapes", "BertForMaskedLM,ViTForImageClassification")
    assert [c["name"] for c in report["cases"]] == ["BertForMaskedLM", "ViTForImageClassification"]
    for case in report["cases"]:
        eager, jit, dynamo = (case["results"][m] for m in ("eager", "jitlab", "compile"))
        calls = len(eager["calls"])
        assert calls == (10 if case["name"] == "BertForMaskedLM" else 15) and eager["dropped"] == []
        _check_counts_add_up(jit, calls)
        _check_counts_add_up(dynamo, calls)
        assert jit["captures"] == sum(jit["new_graphs"]) >= 1 and jit["hits"] == sum(jit["new_hits"])
        assert dynamo["graphs"] == sum(dynamo["new_graphs"]) >= 1 and dynamo["new_graphs"][0] >= 1
        assert jit["captures"] <= 8  # the cache limit: beyond it, calls run eagerly
        if "eager" in jit["served"]:  # a call neither captured nor hit: never without a reason
            assert jit["fallback"] and jit["fallback_reasons"]
        if jit["fallback_for_good"]:  # and after giving up for good, every later call runs eagerly
            assert jit["served"][-1] == "eager"
        limit = 2 if case["name"] == "BertForMaskedLM" else dynamo["graphs"]
        assert case["meets_target"] == (not jit["fallback_for_good"] and jit["captures"] <= limit)
    totals = report["totals"]
    assert totals["ran"] == 2 and totals["jitlab"]["equal"] == totals["compile"]["equal"] == 2


@pytest.mark.slow
def test_generate_tokens_equal_to_eager_for_a_decoder_and_an_encoder_decoder():
    _needs("transformers")
    report = _run("generate", "DistillGPT2,BartForConditionalGeneration,BertForMaskedLM", "--device", "cpu")
    assert report["device"] == "cpu"
    assert [c["name"] for c in report["cases"]] == [
        "BartForConditionalGeneration",
        "DistillGPT2",
    ]  # BERT: no generate
    for case in report["cases"]:
        eager, jit, dynamo = (case["results"][m] for m in ("eager", "jitlab", "compile"))
        assert eager["tokens"] == len(workloads.PROMPT_LENGTHS) * workloads.NEW_TOKENS
        for result in (jit, dynamo):
            _check_counts_add_up(result, 10)
            assert result["per_token_s"] == pytest.approx(result["median_s"] / eager["tokens"])
        assert jit["captures"] == sum(jit["new_graphs"]) and dynamo["graphs"] == sum(dynamo["new_graphs"])
        assert jit["new_graphs"][0] >= 1 and dynamo["new_graphs"][0] >= 1  # the first generate compiles
        if jit["fallback_for_good"]:
            assert jit["fallback_reasons"]


@pytest.mark.slow
def test_train_arrangements_against_eager_step_by_step():
    _needs("transformers")
    report = _run("train", "DistillGPT2,ViTForImageClassification", "--steps", "2", "--optimizer", "sgd")
    assert report["optimizer"] == "sgd" and report["steps"] == 2
    for case in report["cases"]:
        results = case["results"]
        eager = results["eager"]
        assert eager["eager_repeats"] is True and eager["steps"] == 2 and eager["loss"] == "loss"
        for name, result in results.items():
            assert result["error"] is None, (case["name"], name, result)
            assert len(result["losses"]) == 2 and result["losses"] == pytest.approx(eager["losses"], rel=1e-4)
            assert result["first_step_s"] > 0 and result["per_step_s"] > 0
            assert result["bitwise"] == (result["bitwise_steps"] == 2)
            if result["bitwise"]:
                assert result["max_param_diff"] == result["max_loss_diff"] == 0.0
            else:
                assert result["first_difference"].startswith("step ")
        for name in ("jit_step", "jit_model"):  # a fallback runs the step eagerly: bitwise, and says why
            if results[name]["fallback"]:
                assert results[name]["fallback_reasons"] and results[name]["bitwise"], (case["name"], name)
        for name in ("compile_model", "compile_step", "compile_model_opt"):
            assert results[name]["graphs"] >= 1
        assert results["compile_step"]["breaks"] >= 1  # TorchDynamo breaks at loss.backward()
    totals = report["totals"]
    assert totals["ran"] == 2 and totals["eager_repeats"] == 2


def test_mixed_precision_steps_are_one_graph_and_bitwise_eager():
    """`--train --amp`: the forward and the loss under `torch.autocast("cpu", dtype=torch.bfloat16)`
    (train_steps.AMP_STEPS). jitlab.jit records the region as graph nodes, so both of its
    arrangements serve every step from one graph, bitwise equal to eager's bfloat16 steps; before,
    `jitlab.jit(step)` ran every step eagerly and `jitlab.jit(model)`, called inside the region,
    too."""
    _needs("transformers")
    report = _run("train", "DistillGPT2", "--steps", "3", "--amp")
    assert report["amp"] is True
    [case] = report["cases"]
    results = case["results"]
    assert results["eager"]["eager_repeats"] is True
    for name in ("jit_step", "jit_model"):
        result = results[name]
        assert result["error"] is None and not result["fallback"], (name, result)
        assert result["bitwise"] and result["graphs"] == 1 and result["breaks"] == 0, (name, result)
    # the losses are bfloat16's: another run in float32 gives other numbers
    plain = _run("train", "DistillGPT2", "--steps", "1")
    assert plain["amp"] is False
    assert plain["cases"][0]["results"]["eager"]["losses"][0] != results["eager"]["losses"][0]


def test_counting_backend_counts_each_arrangement_and_recompile_limits_are_seen():
    import torch._dynamo

    from jitlab.capture.compile_counts import BreakCounter, CountingBackend, RecompileLimits

    def scale(x):
        return x * 2 + 1

    torch._dynamo.reset()
    first, second = CountingBackend("eager"), CountingBackend("eager")
    breaks = BreakCounter()
    breaks.start()
    with (
        torch._dynamo.config.patch(recompile_limit=2, automatic_dynamic_shapes=False),
        RecompileLimits() as limits,
    ):
        one, two = torch.compile(scale, backend=first), torch.compile(scale, backend=second)
        for n in (2, 3, 4, 5):  # a new static shape each call: a recompile each, until the limit
            assert torch.equal(one(torch.ones(n)), torch.full((n,), 3.0))
        two(torch.ones(7))
    assert first.graphs == 2 and first.ops >= 2  # then the limit: the other calls run eagerly
    assert limits.messages and "recompile_limit" in limits.messages[0] and "'scale'" in limits.messages[0]
    assert breaks.since() == (0, [])
    torch._dynamo.reset()


def test_calls_that_miss_a_full_cache_are_counted_as_fallbacks_with_the_guard_that_failed():
    import jitlab.jit
    from jitlab.capture.compile_counts import jit_counts

    # a string is guarded by value (an int that changes would become a symbolic input after one miss)
    scaled = jitlab.jit.jit(lambda x, s: x * len(s), backend="eager")
    for n in range(12):  # a new value every call: 8 entries, then 4 calls that miss them all
        assert torch.equal(scaled(torch.ones(2), "v" * (n + 1)), torch.ones(2) * (n + 1))
    counts = jit_counts(scaled)
    assert counts["entries"] == 8 and counts["fallback"] and not counts["fallback_for_good"]
    [reason] = counts["fallback_reasons"]
    assert reason.startswith("[cache-limit] 4 call(s) missed the full cache (8 entries) and ran eagerly")
    assert "EQUALS_MATCH: args[1] == 'v'" in reason and len(counts["miss_reasons"]) == 8


def test_a_training_step_part_left_uncompiled_is_in_the_counts_and_the_details():
    """The zoo modes report jitlab.jit's counts: a part of a step left uncompiled (two results that
    require grad outlive the forward) is served by graphs, so only its backend note says it."""
    import torch.nn as nn

    import jitlab.jit
    from jitlab.capture.compile_counts import jit_counts, reason_lines

    model = nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        hidden = model(x)
        loss = hidden.pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss, hidden * 2

    jitted = jitlab.jit.jit(step, backend="aot_eager")
    for _ in range(3):
        jitted(torch.randn(3, 4))
    counts = jit_counts(jitted)
    assert counts["hits"] >= 1 and not counts["fallback"], counts
    [note] = counts["backend_notes"]
    assert "runs uncompiled" in note, note
    lines = reason_lines("m", "jitlab.jit(step)", counts, ())
    assert lines == [f"m · jitlab.jit(step) backend: {note}"], lines
