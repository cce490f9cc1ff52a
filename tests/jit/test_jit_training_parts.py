"""A training step with a compiling backend is cut into parts (frontend/host_split.py); each part
must be compiled, and one that is not must be said in explain(), never left silently uncompiled.

Gemma's RMSNorm computes `1.0 + self.weight.float()`: on a float32 parameter `.float()` returns the
parameter itself. Recorded as a node of its own, that node stood for the parameter from then on, so
the forward part had one output requiring grad per norm weight (their `.grad` reads), and a part
with more than one such output runs uncompiled (a compiled part is one autograd node). Gemma 2's
step ran 1.9x slower than torch.compile's. Compared with an eager copy after every step."""

from __future__ import annotations

import copy

import torch
import torch.nn as nn
from training_step_helpers import OPTIMIZERS, state_tensors
from training_step_helpers import mse_step as step

from jitlab.jit import jit


class ScaledNorm(nn.Module):
    """RMSNorm as Gemma writes it, and conversions that return their input on float32."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        return (normed * (1.0 + self.weight.float())).to(torch.float32).type_as(x)


class NormModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.norm1 = nn.Linear(6, 12), ScaledNorm(12)
        self.fc2, self.norm2 = nn.Linear(12, 3), ScaledNorm(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm2(self.fc2(torch.tanh(self.norm1(self.fc1(x)))))


def step_keeping_hidden(
    model: NormModel, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two results requiring grad outlive the forward: the loss (its backward) and `hidden`."""
    hidden = model.norm1(model.fc1(x))
    loss = nn.functional.mse_loss(model.fc2(hidden), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss, hidden * 2


def _run(fn, optimizer: str, exact: bool, steps: int = 6) -> object:
    """`steps` steps eagerly and through jitlab.jit (aot_eager): every result, parameter and optimizer
    state compared; at most 2 captures (momentum buffers and Adam's state exist from the second
    step on), every later step a hit. Returns the explain()."""
    torch.manual_seed(0)
    models = [NormModel()]
    models.append(copy.deepcopy(models[0]))
    opts = [OPTIMIZERS[optimizer](m.parameters()) for m in models]
    jitted = jit(fn, backend="aot_eager")
    for i in range(steps):
        g = torch.Generator().manual_seed(i)
        x, y = torch.randn(5, 6, generator=g), torch.randn(5, 3, generator=g)
        expected, got = fn(models[0], opts[0], x, y), jitted(models[1], opts[1], x, y)
        pairs = list(zip(torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(got)))
        pairs += list(zip(models[0].parameters(), models[1].parameters()))
        pairs += list(zip(state_tensors(opts[0]), state_tensors(opts[1]), strict=True))
        for k, (a, b) in enumerate(pairs):
            if exact:
                assert torch.equal(a, b), f"step {i}, value {k}: {(a - b).abs().max().item()}"
            else:
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=f"step {i}, value {k}")
    report = jitted.explain()
    assert report.captures <= 2 and not report.fallbacks, report
    assert sum(g.hits for g in report.graphs) == steps - report.captures, report
    return report


def test_a_conversion_returning_the_parameter_keeps_the_forward_compiled():
    report = _run(step, "sgd-momentum", exact=True)
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]


def test_the_same_with_adamw():
    report = _run(step, "adamw", exact=False)
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]


def test_a_part_left_uncompiled_is_said_in_explain():
    report = _run(step_keeping_hidden, "sgd-momentum", exact=True)
    for note in [g.backend_note for g in report.graphs]:
        assert note is not None and "runs uncompiled" in note and "require grad" in note, note
    assert "runs uncompiled" in str(report)


def _inner_step_then_break(
    x: torch.Tensor, fc: nn.Linear, opt: torch.optim.Optimizer, sched: object
) -> torch.Tensor:
    """A step on a detached copy of `h` (one graph with its backward), a scheduler step (a break),
    then `h` and the loss read detached: the second graph's inputs are both results of the first."""
    h = x * 1.0
    loss = (fc(h.detach()) - h.detach().tanh()).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    sched.step()
    return h + loss.detach() * 0.1


def test_an_input_the_graph_only_detaches_is_no_edge_of_its_backward():
    """The graph after the break was compiled with the loss as an input requiring grad: AOTAutograd
    tied it to that graph's autograd node, so the caller's backward through the result walked into
    the first graph's backward, already run, and raised "Trying to backward through the graph a
    second time" (fuzz seed 15, program 414). Eager code cuts that edge with `loss.detach()`."""
    torch.manual_seed(0)
    fcs = [nn.Linear(4, 4)]
    fcs.append(copy.deepcopy(fcs[0]))
    opts = [torch.optim.SGD(fc.parameters(), lr=0.1) for fc in fcs]
    scheds = [torch.optim.lr_scheduler.CosineAnnealingLR(opt, 5) for opt in opts]
    jitted = jit(_inner_step_then_break, backend="aot_eager")
    for i, rows in enumerate([4, 1, 1, 1, 4, 1]):
        grads = []
        for fn, fc, opt, sched in zip((_inner_step_then_break, jitted), fcs, opts, scheds):
            x = torch.randn(rows, 4, generator=torch.Generator().manual_seed(i), requires_grad=True)
            out = fn(x, fc, opt, sched)
            out.pow(2).sum().backward()
            grads.append((out.detach(), x.grad))
        assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1]), i
        for a, b in zip(fcs[0].parameters(), fcs[1].parameters()):
            assert torch.equal(a, b), i
    report = jitted.explain()
    # the first capture fixes the learning rate, which the scheduler changes (then a graph input),
    # and the batch size changes twice: every other call is a hit, none runs eagerly
    assert not report.fallbacks and report.captures <= 3, report
    assert sum(g.hits for g in report.graphs) == 6 - report.captures, report


def _two_results(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = x * 1.0
    loss = (h.detach() @ w).pow(2).mean()  # shares no operation with h
    return h, loss


def test_results_eager_keeps_apart_stay_apart():
    # the graph before a backward pass the program breaks at: a loss from h.detach(), and h itself;
    # compiled as one autograd node, the loss's backward ran h's too, and the caller's later backward
    # through h raised "backward through the graph a second time" (fuzz seed 103, program 37)
    w = nn.Parameter(torch.randn(4, 4))
    jitted = jit(_two_results, backend="aot_eager")
    for _ in range(3):
        x = torch.randn(3, 4, requires_grad=True)
        h, loss = jitted(x, w)
        loss.backward()
        h.sum().backward()
        expected = torch.ones(3, 4)
        torch.testing.assert_close(x.grad, expected)
    report = jitted.explain()
    assert report.captures == 1 and not report.fallback_reasons, str(report)
    notes = [e.backend_note for e in report.graphs]
    assert notes and "share no operation" in (notes[0] or ""), str(report)


def test_results_sharing_an_operation_stay_one_compiled_graph():
    w = nn.Parameter(torch.randn(4, 4))

    def shared(x):
        h = (x @ w).tanh()
        return h, h.pow(2).mean()

    jitted = jit(shared, backend="aot_eager")
    h, loss = jitted(torch.randn(3, 4))
    loss.backward()
    assert w.grad is not None
    assert not any(e.backend_note for e in jitted.explain().graphs), str(jitted.explain())


def test_a_compiled_step_reads_and_writes_grad_without_calling_python():
    # between the compiled parts, `.grad` reads and writes run as attribute accesses: each Python call
    # from that function could map and unmap a frame chunk of its own (host_split._host_copy)
    import sys

    from training_step_helpers import Mlp, batch

    torch.manual_seed(0)
    model = Mlp()
    reference = copy.deepcopy(model)
    opt, ref_opt = (
        torch.optim.AdamW(model.parameters(), lr=0.01),
        torch.optim.AdamW(reference.parameters(), lr=0.01),
    )
    jitted = jit(step, backend="aot_eager")
    called: list[str] = []

    def profile(frame, event, arg):
        if event == "call":
            called.append(frame.f_code.co_name)

    for i in range(3):
        x, y = batch(i)
        if i == 2:
            sys.setprofile(profile)
        try:
            loss = jitted(model, opt, x, y)
        finally:
            sys.setprofile(None)
        expected = step(reference, ref_opt, x, y)
        torch.testing.assert_close(loss, expected)
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p, q)
    report = jitted.explain()
    assert report.captures == 1 and report.graphs[0].hits == 2, str(report)
    assert called and "get_grad" not in called and "set_grad" not in called, sorted(set(called))
