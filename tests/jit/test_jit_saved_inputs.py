"""What a compiled part saves for its backward must not change before that backward runs
(frontend/saved_inputs.py).

A graph with grad-mode switches is compiled part by part. AOTAutograd may save a part's input for the
backward where eager code saves a new intermediate; a buffer updated under `no_grad` after the part
then made the caller's backward raise "modified by an inplace operation" (fuzz seed 105, program
1754). Such an input is handed over as a copy; an output changed in place before the backward leaves
its part uncompiled, said in explain(). A training step's optimizer update, after the backward that
frees what the forward saved, copies nothing."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

from jitlab.jit import jit


class RunningMean(nn.Module):
    """A buffer's running average updated under no_grad between operations autograd records."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("ema", torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        with torch.no_grad():
            self.ema.mul_(0.9).add_(h.mean(0) * 0.1)
        h = (h + self.ema).abs() + 0.1
        with torch.no_grad():
            self.ema.mul_(0.9).add_(h.mean(0) * 0.1)
        return h + self.ema


def _grads(model: nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    return [x.grad, *(p.grad for p in model.parameters())]


@pytest.mark.parametrize("backend", ["aot_eager"])
def test_a_buffer_changed_after_a_part_does_not_break_the_callers_backward(backend):
    torch.manual_seed(0)
    eager = RunningMean()
    model = copy.deepcopy(eager)
    jitted = jit(model, backend=backend)
    for i in range(5):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(i))
        xs = [x.clone().requires_grad_(), x.clone().requires_grad_()]
        expected, got = eager(xs[0]), jitted(xs[1])
        expected.pow(2).mean().backward()
        got.pow(2).mean().backward()  # raised "modified by an inplace operation" from the second call
        torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(model.ema, eager.ema, rtol=1e-6, atol=1e-6)
        for a, b in zip(_grads(model, xs[1]), _grads(eager, xs[0]), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
        for m in (eager, model):
            m.zero_grad()
    report = jitted.explain()
    assert report.captures == 1 and not report.fallbacks, report
    assert sum(g.hits for g in report.graphs) == 4, report
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]


class _Recorder:
    """A backend that runs each part as recorded and keeps the example inputs it was given, with
    the grad mode it was compiled in."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, list[object], bool]] = []

    def __call__(self, gm: torch.fx.GraphModule, inputs: list[object]):
        self.parts.append((gm.code, list(inputs), torch.is_grad_enabled()))
        return gm.forward

    def grad_parts(self) -> list[tuple[str, list[object]]]:
        return [(code, inputs) for code, inputs, grad in self.parts if grad]


def _addresses(inputs: list[object]) -> set[int]:
    return {v.data_ptr() for v in inputs if isinstance(v, torch.Tensor)}


def test_the_part_reading_the_buffer_gets_a_copy():
    model = RunningMean()
    recorder = _Recorder()
    jit(model, backend=recorder)(torch.randn(3, 4, requires_grad=True))
    reading = [inputs for code, inputs in recorder.grad_parts() if "abs" in code]
    assert len(reading) == 1, [code for code, _ in recorder.grad_parts()]
    assert model.ema.data_ptr() not in _addresses(reading[0])
    first = [inputs for code, inputs in recorder.grad_parts() if "linear" in code]
    assert first and model.fc.weight.data_ptr() in _addresses(first[0])  # not changed: not copied


def _step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, keep: str) -> torch.Tensor:
    loss = model(x).pow(2).mean()
    loss.backward(retain_graph=keep == "retain_graph")
    opt.step()
    opt.zero_grad()
    return loss.detach()


@pytest.mark.parametrize("keep", ["nothing", "retain_graph"])
def test_a_training_step_copies_parameters_only_while_its_graph_is_kept(keep):
    """The optimizer changes the parameters after the backward pass: that frees what the forward
    saved, so nothing is copied; with retain_graph=True what it saved lives on, so it is."""
    torch.manual_seed(0)
    models = [nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))]
    models.append(copy.deepcopy(models[0]))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in models]
    recorder = _Recorder()
    jitted = jit(_step, backend=recorder)
    for i in range(4):
        x = torch.randn(5, 4, generator=torch.Generator().manual_seed(i))
        assert torch.equal(_step(models[0], opts[0], x, keep), jitted(models[1], opts[1], x, keep))
        for a, b in zip(models[0].parameters(), models[1].parameters(), strict=True):
            assert torch.equal(a, b)
    forward = [inputs for code, inputs in recorder.grad_parts() if "linear" in code]
    assert forward, [code for code, _ in recorder.grad_parts()]
    weights = {p.data_ptr() for p in models[1].parameters()}
    passed = _addresses(forward[0]) & weights
    assert passed == (weights if keep == "nothing" else set())


def _changes_its_result(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = torch.tanh(x @ w) * 2
    with torch.no_grad():
        h.add_(1.0)
    return h


def test_a_result_changed_before_its_backward_leaves_the_part_uncompiled():
    jitted = jit(_changes_its_result, backend="aot_eager")
    for i in range(3):
        g = torch.Generator().manual_seed(i)
        x, w = torch.randn(3, 4, generator=g), torch.randn(4, 2, generator=g)
        ws = [w.clone().requires_grad_(), w.clone().requires_grad_()]
        expected, got = _changes_its_result(x, ws[0]), jitted(x, ws[1])
        expected.sum().backward()
        got.sum().backward()
        assert torch.equal(got, expected)
        assert torch.equal(ws[1].grad, ws[0].grad)
    notes = [g.backend_note for g in jitted.explain().graphs]
    assert notes and "changes in place" in (notes[0] or "") and "before its backward" in notes[0], notes
