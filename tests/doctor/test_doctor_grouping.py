"""One finding per line, naming the cause: a training step seen by every check at once."""

from __future__ import annotations

import pytest
from doctor_helpers import line_of, program, view

from jitlab.doctor import diagnose
from jitlab.doctor.findings import Finding, FindingSet, View

TRAINING = program("training.py")


@pytest.fixture(scope="module")
def training():
    from jitlab.machine.peaks import MachinePeaks

    peaks = MachinePeaks(  # fixed peaks of a typical CPU, as in test_doctor_regime.py
        bandwidth_bytes_per_s=2e10,
        flops_f32=2e11,
        flops_f64=1e11,
        overhead_s={"torch": 5e-6},
        measured_at="test",
    )
    return diagnose(
        f"{TRAINING}:train_step", "batch", checks=["sync", "loops", "graph", "jit", "regime"], peaks=peaks
    )


def at(diagnosis, marker: str) -> Finding:
    (found,) = [f for f in diagnosis.findings if f.line == line_of(TRAINING, marker)]
    return found


def test_one_finding_per_line(training):
    lines = [f.location for f in training.findings]
    assert len(lines) == len(set(lines))
    assert {f.line for f in training.findings} >= {
        line_of(TRAINING, marker) for marker in ("nonzero", "zero_grad", "backward", "step", "item")
    }


def test_the_nonzero_line_names_the_shape_and_shows_the_other_views(training):
    found = at(training, "nonzero")
    assert found.kind == "data-dependent-shape" and "torch.nonzero" in found.detail
    assert "learn the output size" in view(found, "sync")
    assert "Dynamic shape operator" in view(found, "graph-break")
    assert "topk" in found.suggestion


def test_backward_and_step_are_named_as_a_training_step_not_as_a_user_inserted_break(training):
    backward, step = at(training, "backward"), at(training, "step")
    assert "backward pass" in backward.detail
    assert "optimizer step" in step.detail and "torch/optim/optimizer.py" in step.detail
    for found in (backward, step, at(training, "zero_grad")):
        assert "User-inserted" not in found.detail
        assert "training step with jitlab.jit(step)" in found.suggestion
        assert not [v for v in found.views if v.kind == "jit-break"]  # jitlab.jit captures the whole step
    # TorchDynamo's break inside torch.optim, logged a second time without its traceback, is not
    # put at the function's def line
    definition = [f for f in training.findings if f.line == line_of(TRAINING, "def")]
    assert all(f.kind == "recompile" and not f.views for f in definition)


def test_item_is_a_sync_whose_graph_break_is_a_view(training):
    found = at(training, "item")
    assert found.cause == "sync" and "Tensor.item()" in found.detail
    assert "capture_scalar_outputs" in view(found, "graph-break")
    assert found.kind == "graph-break"  # the most severe kind seen at the line


def test_the_jit_summary(training):
    # the whole step in one graph per call; the nonzero's size and the item() are specialised
    assert (
        not training.jit["fallback"]
        and training.jit["captures"] >= 1
        and training.jit["graphs_per_call"] == 1
    )
    assert any(s.startswith("shape of nonzero == ") for s in training.jit["specialisations"])


def test_overhead_advice_to_compile_names_the_breaks_first(training):
    assert training.regime.verdict == "overhead"  # a small model: Python and dispatch dominate
    assert "torch.compile breaks this function at 5 line(s)" in training.regime.suggestion


def test_grouping_keeps_counts_and_every_kind():
    found = FindingSet()
    found.add(Finding("sync", "a.py:3", "Tensor.item(): copies one value", "keep it on the device", 4))
    found.add(Finding("blocking-in-loop", "a.py:3", "ran 4 times in the loop", "move it out", 4))
    found.add(Finding("graph-break", "a.py:3", "graph break: item", "capture_scalar_outputs"))
    found.add(Finding("recompile", "a.py:1", "recompiled", "dynamic=True"))
    (first, third) = found.grouped()
    assert (first.location, first.kind, first.views) == ("a.py:1", "recompile", ())
    assert third.kind == "blocking-in-loop" and third.cause == "sync" and third.count == 4
    assert third.detail == "Tensor.item(): copies one value" and third.suggestion == "move it out"
    assert third.views == (
        View("blocking-in-loop", "ran 4 times in the loop"),
        View("graph-break", "graph break: item"),
    )
    assert third.kinds == ("blocking-in-loop", "sync", "graph-break")
    assert third.to_json()["cause"] == "sync" and first.to_json()["cause"] == "recompile"


def test_the_jit_view_of_a_line_counts_once_and_the_count_is_the_lines_runs():
    sampler = program("sampler.py")
    found = diagnose(f"{sampler}:naive_sample", "make_labels", checks=["sync", "jit"]).findings
    nonzero = [f for f in found if f.line == line_of(sampler, "nonzero-positives")]
    (finding,) = nonzero
    assert finding.count == 1  # it ran once in the call, whatever jitlab.jit's entries repeat
    assert [v.kind for v in finding.views].count("jit-break") == 1
    assert "specialisation [data-dependent]: shape of" in view(finding, "jit-break")
