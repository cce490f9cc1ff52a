"""A whole training step with a compiling backend (issue 45) keeps serving from its cache when what
changes between calls is the batch size: the parts the step is cut into (the forward with its
backward, the optimizer's update; frontend/host_split.py) are compiled for symbolic sizes, each with
the fake values of its inputs, which require grad where the real ones do. Compared with an eager
copy of the model and optimizer after every step."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
from training_step_helpers import OPTIMIZERS, state_tensors
from training_step_helpers import mse_step as step

from jitlab.jit import jit

BATCH_SIZES = [4, 7, 5, 9, 3, 12, 6, 8, 11, 4, 7, 10]  # 9 sizes, none 0 or 1 (those get entries of their own)


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))


def _compare_steps(backend: str, optimizer: str, exact: bool, sizes: list[int] = BATCH_SIZES) -> object:
    """The step on an eager model and optimizer and on a jitted copy, for each batch size; every loss,
    parameter and optimizer state compared after each step. Returns the jitted step's explain()."""
    torch.manual_seed(0)
    models = [_mlp()]
    models.append(copy.deepcopy(models[0]))
    opts = [OPTIMIZERS[optimizer](m.parameters()) for m in models]
    jitted = jit(step, backend=backend)
    for i, b in enumerate(sizes):
        g = torch.Generator().manual_seed(i)
        x, y = torch.randn(b, 6, generator=g), torch.randn(b, 3, generator=g)
        pairs = [(step(models[0], opts[0], x, y), jitted(models[1], opts[1], x, y))]
        pairs += list(zip(models[0].parameters(), models[1].parameters()))
        pairs += list(zip(state_tensors(opts[0]), state_tensors(opts[1]), strict=True))
        _assert_pairs(pairs, exact, f"step {i} (batch {b})")
    return jitted.explain()


def _assert_pairs(pairs: list, exact: bool, where: str) -> None:
    """Each (eager, jitted) pair bitwise equal, or within float tolerance."""
    for k, (a, c) in enumerate(pairs):
        if exact:
            assert torch.equal(a, c), f"{where}, value {k}: {(a - c).abs().max().item()}"
        else:
            torch.testing.assert_close(a, c, rtol=1e-4, atol=1e-5, msg=f"{where}, value {k}")


def _served_symbolic(report: object, steps: int) -> None:
    """At most two captures (the first static, the second with symbolic sizes), every later call a
    hit, every part compiled (no backend note: a part that failed to compile runs as it is)."""
    assert not report.fallbacks, report.fallbacks
    assert report.captures <= 2, report
    assert sum(g.hits for g in report.graphs) == steps - report.captures
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]
    assert report.graphs[-1].symbolic_sizes and report.graphs[-1].shape_note is None


@pytest.mark.parametrize("optimizer", ["sgd-momentum", "sgd-nesterov-foreach"])
def test_batch_size_varies_aot_eager_bitwise(optimizer):
    """SGD takes the same operations on the compiler path: bitwise eager's at every step."""
    _served_symbolic(_compare_steps("aot_eager", optimizer, exact=True), len(BATCH_SIZES))


@pytest.mark.parametrize("optimizer", ["adam", "adamw-foreach", "adam-foreach-amsgrad"])
def test_batch_size_varies_aot_eager_adam(optimizer):
    """Adam's step sizes are 0-d tensors on torch.optim's compiler path, handed to `addcdiv_` as its
    scalar: rewritten as an operand for the run on fake tensors too (ATen would read it with
    `.item()`, an unbacked float there, which kept the sizes static). Eager's up to rounding."""
    _served_symbolic(_compare_steps("aot_eager", optimizer, exact=False), len(BATCH_SIZES))


@pytest.mark.parametrize(
    "optimizer", ["adamw-fused", "adam-fused-amsgrad", "sgd-fused-momentum", "adagrad-fused"]
)
def test_fused_optimizer_runs_between_compiled_parts(optimizer):
    """A fused optimizer's kernel (`fused=True`: one native kernel updates every parameter and its
    state in place) cannot be functionalized by AOTAutograd; compiled into a part, the whole graph
    ran as recorded, with a backend failure in its note. It runs on the host between the parts, as
    eager code calls it, and the forward, backward and the step count's update stay compiled: no
    backend note, and bitwise eager's (the kernel is eager's own)."""
    report = _compare_steps("aot_eager", optimizer, exact=True)
    _served_symbolic(report, len(BATCH_SIZES))


@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["sgd-momentum", "adamw", "adamw-fused"])
def test_batch_size_varies_inductor(optimizer):
    """Inductor rebuilds `2 / x.numel()` (mse_loss's backward) from the size symbols, which it then
    needs as inputs of the graph, as TorchDynamo hands them over (frontend/size_inputs.py)."""
    _served_symbolic(_compare_steps("inductor", optimizer, exact=False), len(BATCH_SIZES))


def test_batch_size_one_gets_an_entry_of_its_own():
    """Sizes 0 and 1 are specialised (TorchDynamo's 0/1 specialisation): one capture more, and the
    symbolic entry keeps serving the others."""
    sizes = [4, 7, 1, 5, 9, 1, 3, 2, 6]
    report = _compare_steps("aot_eager", "sgd-momentum", exact=True, sizes=sizes)
    assert not report.fallbacks and report.captures == 3
    assert sum(g.hits for g in report.graphs) == len(sizes) - 3


@pytest.mark.slow
def test_forward_with_a_loss_inductor_symbolic():
    """Not only a whole step: a forward returning an mse_loss, differentiated by the caller, on
    varying batches with Inductor used to run uncompiled ("backend failed (KeyError: s0)")."""
    torch.manual_seed(0)
    models = [_mlp()]
    models.append(copy.deepcopy(models[0]))

    def forward(model, x, y):
        return nn.functional.mse_loss(model(x), y)

    jitted = jit(forward, backend="inductor")
    for i, b in enumerate([4, 7, 5, 9, 3]):
        x, y = torch.randn(b, 6), torch.randn(b, 3)
        losses = [forward(models[0], x, y), jitted(models[1], x, y)]
        for loss in losses:
            loss.backward()
        torch.testing.assert_close(losses[0], losses[1])
        for p, q in zip(models[0].parameters(), models[1].parameters()):
            torch.testing.assert_close(p.grad, q.grad, msg=f"call {i}")
    report = jitted.explain()
    assert report.captures == 2 and all(g.backend_note is None for g in report.graphs)
    assert sum(g.hits for g in report.graphs) == 3


def test_value_requiring_grad_crosses_a_backward_pass():
    """`h` is computed before a first backward pass and used after it: the part after it takes `h` as
    an input that requires grad. Its fake must require grad too, or AOTAutograd compiles that part
    for inference and the second loss's gradient never reaches fc1 (every step after the symbolic
    capture was wrong, silently)."""

    def make_step(model, opt):
        def step(x, y):
            h = torch.tanh(model[0](x))
            aux = h.pow(2).mean()
            aux.backward(retain_graph=True)
            loss = nn.functional.mse_loss(model[2](h * 2.0), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss, aux.detach()

        return step

    torch.manual_seed(0)
    models = [_mlp()]
    models.append(copy.deepcopy(models[0]))
    opts = [OPTIMIZERS["sgd-momentum"](m.parameters()) for m in models]
    eager, jitted = make_step(models[0], opts[0]), jit(make_step(models[1], opts[1]), backend="aot_eager")
    for i, b in enumerate(BATCH_SIZES):
        x, y = torch.randn(b, 6), torch.randn(b, 3)
        for a, c in zip(eager(x, y), jitted(x, y)):
            assert torch.equal(a, c), f"step {i}: result"
        for p, q in zip(models[0].parameters(), models[1].parameters()):
            assert torch.equal(p, q), f"step {i}: parameter"
    report = jitted.explain()
    assert report.captures == 2 and sum(g.hits for g in report.graphs) == len(BATCH_SIZES) - 2
    assert report.graphs[-1].symbolic_sizes
    # the part before the first backward has two results requiring grad used after it (h and aux):
    # it runs uncompiled, and explain() says so; the parts after it are compiled (no failure noted)
    note = report.graphs[-1].backend_note
    assert note is not None and note.startswith("a part of 8 operations runs uncompiled: 2 of its results"), (
        note
    )


class _ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.fc = nn.Conv2d(2, 4, 3, padding=1), nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).mean(dim=(2, 3)))


@pytest.mark.slow
@pytest.mark.parametrize("whole_step", [True, False])
def test_convolution_training_inductor_symbolic(whole_step):
    """Inductor on the CPU makes a convolution's saved input channels-last, and its backward asserted
    the strides of the first symbolic capture's sizes: the next batch raised in `loss.backward()`,
    inside the step or in the caller's code (`jitlab.jit(model)`). Graphs with a backward and
    symbolic sizes are compiled without layout optimisation."""
    torch.manual_seed(0)
    models = [_ConvNet()]
    models.append(copy.deepcopy(models[0]))
    opts = [OPTIMIZERS["sgd-momentum"](m.parameters()) for m in models]
    jitted = jit(step if whole_step else models[1], backend="inductor")
    for i, (b, hw) in enumerate([(4, 5), (7, 6), (9, 5), (3, 7), (12, 6), (5, 5)]):
        x, y = torch.randn(b, 2, hw, hw), torch.randn(b, 3)
        losses = [step(models[0], opts[0], x, y)]
        if whole_step:
            losses.append(jitted(models[1], opts[1], x, y))
        else:
            losses.append(nn.functional.mse_loss(jitted(x), y))
            losses[-1].backward()
            opts[1].step()
            opts[1].zero_grad()
        torch.testing.assert_close(losses[0], losses[1], msg=f"step {i}")
        for p, q in zip(models[0].parameters(), models[1].parameters()):
            torch.testing.assert_close(p, q, msg=f"step {i}")
    report = jitted.explain()
    assert (
        not report.fallbacks and report.captures == 2 and all(g.backend_note is None for g in report.graphs)
    )
    assert sum(g.hits for g in report.graphs) == 4


def _item_step(model, opt, x, y):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.item()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_returned_item_is_read_after_the_graph(backend):
    """`return loss.item()`: with a compiling backend the float was a speculation re-checked by value
    (a capture per call); it is read after the compiled graph now. With either backend the loss's
    `.item()` no longer pins the batch size (a 0-d tensor's shape depends on no size)."""
    torch.manual_seed(0)
    models = [_mlp()]
    models.append(copy.deepcopy(models[0]))
    opts = [OPTIMIZERS["sgd-momentum"](m.parameters()) for m in models]
    jitted = jit(_item_step, backend=backend)
    for i, b in enumerate(BATCH_SIZES):
        x, y = torch.randn(b, 6), torch.randn(b, 3)
        expected, got = _item_step(models[0], opts[0], x, y), jitted(models[1], opts[1], x, y)
        assert type(got) is float and got == expected, (i, expected, got)
        for p, q in zip(models[0].parameters(), models[1].parameters()):
            assert torch.equal(p, q), f"step {i}"
    report = jitted.explain()
    assert not report.fallbacks and report.captures == 2
    assert sum(g.hits for g in report.graphs) == len(BATCH_SIZES) - 2
    assert not any(g.speculations for g in report.graphs), [g.speculations for g in report.graphs]


def test_item_read_by_the_program_is_still_checked():
    """A read that Python uses (arithmetic, a tensor operation, a decision) stays a speculation with a
    compiling backend: its value is a constant of the graph, re-checked, so every call is right; a
    read followed by an in-place change of the tensor read returns the value at the read."""

    def fn(x, w):
        v = (x @ w).sum()
        read = v.item()
        v.add_(1.0)  # after the read: the result is the value before
        scaled = x * (x.mean().item() * 2)  # handed to a tensor operation: specialised
        return read, v, scaled, float(v) if read > 0 else -1.0

    jitted = jit(fn, backend="aot_eager")
    w = torch.randn(4, 2)
    for i in range(6):
        x = torch.randn(3, 4) + (0.5 if i % 2 else -0.5)
        expected, got = fn(x, w), jitted(x, w)
        assert got[0] == expected[0] and got[3] == expected[3], i
        assert torch.equal(got[1], expected[1]) and torch.allclose(got[2], expected[2]), i
    assert not jitted.explain().fallbacks


def test_forward_returning_its_loss_item_compiled():
    """Not only training steps: a forward that returns its output and `loss.item()` is one entry."""
    torch.manual_seed(0)
    model = _mlp()

    def forward(x, y):
        out = model(x)
        return out, nn.functional.mse_loss(out, y).item()

    jitted = jit(forward, backend="aot_eager")
    for i in range(5):
        x, y = torch.randn(4, 6), torch.randn(4, 3)
        expected, got = forward(x, y), jitted(x, y)
        assert torch.equal(expected[0], got[0]) and expected[1] == got[1], i
        assert got[0].requires_grad
    report = jitted.explain()
    assert report.captures == 1 and report.graphs[0].hits == 4 and report.graphs[0].backend_note is None


SCHEDULES = {
    "StepLR": lambda opt: torch.optim.lr_scheduler.StepLR(opt, 1, 0.8),
    "CosineAnnealingLR": lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, 10),
    "LambdaLR": lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 / (1 + s)),
    # changes SGD's momentum (Adam's betas) on every step too
    "OneCycleLR": lambda opt: torch.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=40),
    "warmup": lambda opt: torch.optim.lr_scheduler.LinearLR(opt, 0.1, 1.0, total_iters=8),
    "param_groups": None,  # the caller sets group["lr"] by hand before each step
}


def scheduled_step(model, opt, sched, x, y):
    loss = step(model, opt, x, y)
    sched.step()
    return loss


def _compare_scheduled(
    backend: str, optimizer: str, schedule: str, inside: bool, exact: bool, steps: int = 12
):
    """A step whose learning rate changes on every call, on an eager model and a jitted copy (the
    scheduler's step inside the jitted step or after it); the loss, every parameter, optimizer state
    and learning rate compared after each step. Returns the jitted step's explain()."""
    torch.manual_seed(0)
    models = [_mlp()]
    models.append(copy.deepcopy(models[0]))
    opts = [OPTIMIZERS[optimizer](m.parameters()) for m in models]
    make = SCHEDULES[schedule]
    scheds = [make(opt) for opt in opts] if make is not None else None
    jitted = jit(scheduled_step if inside else step, backend=backend)
    for i in range(steps):
        g = torch.Generator().manual_seed(i)
        x, y = torch.randn(5, 6, generator=g), torch.randn(5, 3, generator=g)
        if scheds is None:
            for opt in opts:
                for group in opt.param_groups:
                    group["lr"] = 0.1 / (i + 1)
        if inside:
            pairs = [
                (
                    scheduled_step(models[0], opts[0], scheds[0], x, y),
                    jitted(models[1], opts[1], scheds[1], x, y),
                )
            ]
        else:
            pairs = [(step(models[0], opts[0], x, y), jitted(models[1], opts[1], x, y))]
            for sched in scheds or ():
                sched.step()
        pairs += list(zip(models[0].parameters(), models[1].parameters()))
        pairs += list(zip(state_tensors(opts[0]), state_tensors(opts[1]), strict=True))
        _assert_pairs(pairs, exact, f"step {i}")
        for key in ("lr", "momentum", "betas"):
            assert [g.get(key) for g in opts[0].param_groups] == [g.get(key) for g in opts[1].param_groups]
    return jitted.explain()


def _served_with_float_inputs(report: object, steps: int) -> None:
    """Two captures (the first with the learning rate a constant, the second with it an input), every
    later step a hit, every part compiled; explain() names the learning rate as a graph input."""
    assert not report.fallbacks, report.fallbacks
    assert report.captures <= 2, report
    assert sum(g.hits for g in report.graphs) == steps - report.captures, report
    assert all(g.backend_note is None for g in report.graphs), [g.backend_note for g in report.graphs]
    notes = [n for g in report.graphs for n in g.notes if "['lr'] is a graph input" in n]
    assert notes and "0-d float64 tensor" in notes[0], report


@pytest.mark.parametrize(
    ("optimizer", "schedule", "inside"),
    [
        ("sgd-momentum", "StepLR", False),
        ("sgd-momentum", "OneCycleLR", True),
        ("sgd-nesterov-foreach", "param_groups", False),
        ("sgd", "warmup", True),
    ],
)
def test_changing_learning_rate_compiled_sgd_bitwise(optimizer, schedule, inside):
    """A learning rate (and OneCycleLR's momentum) that changes on every step is a graph input of the
    compiled graphs (a 0-d float64 tensor read with .item() inside the graph): two captures and hits
    after, where each value was a capture of its own until the cache limit. SGD's arithmetic on it
    is Python float arithmetic between the parts and ATen gets it as a number, as eagerly: bitwise."""
    _served_with_float_inputs(_compare_scheduled("aot_eager", optimizer, schedule, inside, exact=True), 12)


@pytest.mark.parametrize(
    ("optimizer", "schedule", "inside"),
    [
        ("adam", "LambdaLR", False),
        ("adamw-foreach", "CosineAnnealingLR", True),
        ("adam-foreach-amsgrad", "OneCycleLR", False),  # Adam's betas change too
    ],
)
def test_changing_learning_rate_compiled_adam(optimizer, schedule, inside):
    """Adam's step sizes are 0-d tensors on torch.optim's path for compilers: eager's up to rounding
    (as with a constant learning rate), served from two captures."""
    _served_with_float_inputs(_compare_scheduled("aot_eager", optimizer, schedule, inside, exact=False), 12)


@pytest.mark.slow
def test_changing_learning_rate_inductor():
    """Inductor takes the learning rate as a number its kernels read: eager's up to rounding. AdamW's
    `exp_avg.lerp_(grad, 1 - beta1)` with OneCycleLR's changing beta1 is compiled again with the
    weight as a 0-d tensor (Inductor's decomposition decides on a number weight: float_inputs.py)."""
    report = _compare_scheduled("inductor", "adamw", "OneCycleLR", False, exact=False)
    _served_with_float_inputs(report, 12)


def thresholded_step(model, opt, x, y):
    loss = nn.functional.mse_loss(model(x), y)
    if opt.param_groups[0]["lr"] > 0.03:  # decided on the input: guarded by the outcome, not the value
        loss = loss * 2
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def test_decision_on_a_changing_learning_rate_compiled():
    """Python deciding on a float input (a comparison with a constant) is guarded by its outcome: one
    capture per outcome, and the step after the threshold is crossed takes the other branch."""
    torch.manual_seed(0)
    models = [_mlp()]
    models.append(copy.deepcopy(models[0]))
    opts = [OPTIMIZERS["sgd-momentum"](m.parameters()) for m in models]
    jitted = jit(thresholded_step, backend="aot_eager")
    for i in range(12):
        for opt in opts:
            opt.param_groups[0]["lr"] = 0.1 / (i + 1)  # above 0.03 for 3 steps, below after
        x, y = torch.randn(5, 6), torch.randn(5, 3)
        assert torch.equal(thresholded_step(models[0], opts[0], x, y), jitted(models[1], opts[1], x, y)), i
        for p, q in zip(models[0].parameters(), models[1].parameters()):
            assert torch.equal(p, q), i
    report = jitted.explain()
    assert not report.fallbacks and report.captures <= 3, report
    assert sum(g.hits for g in report.graphs) == 12 - report.captures
    guards = [t for g in report.graphs for t in g.guards if "['lr'] > 0.03 is True" in t]
    assert guards, report


def scaled_softmax(x: torch.Tensor, temperature: float) -> torch.Tensor:
    return torch.softmax(x / temperature, dim=-1) * (1 - temperature)


def test_changing_float_argument_compiled():
    """A float argument that changes between calls (a temperature) is an input of the compiled graph,
    not a constant the compiler keeps: bitwise eager's on every call, from two captures."""
    jitted = jit(scaled_softmax, backend="aot_eager")
    for i in range(8):
        x, t = torch.randn(4, 5), 0.5 + 0.1 * i
        assert torch.equal(jitted(x, t), scaled_softmax(x, t)), i
    report = jitted.explain()
    assert report.captures == 2 and sum(g.hits for g in report.graphs) == 6, report
    assert all(g.backend_note is None for g in report.graphs)


@pytest.mark.parametrize("inside", [False, True], ids=["caller", "call"])
def test_a_result_can_be_backpropagated_through_twice(inside):
    # eager code may retain a result's graph and backpropagate through it again; AOTAutograd's
    # donated buffers refuse that, and torch compiles the backward with them at once for symbolic
    # sizes, so the third batch size raised "compiled with non-empty donated buffers" (fuzz seed 102,
    # a training step with `loss.backward(retain_graph=True)` inside the call)
    torch.manual_seed(0)
    model = _mlp()
    reference = copy.deepcopy(model)

    def twice(m, x):
        loss = m(x).pow(2).mean()
        if inside:
            loss.backward(retain_graph=True)
            (loss * 0.5).backward()
        return loss

    jitted = jit(lambda x: twice(model, x), backend="aot_eager")
    for rows in BATCH_SIZES[:5]:
        x = torch.randn(rows, 6)
        for fn in (lambda v: twice(reference, v), jitted):
            loss = fn(x)
            if not inside:
                loss.backward(retain_graph=True)
                (loss * 0.5).backward()
        for p, q in zip(model.parameters(), reference.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad)
    report = jitted.explain()
    assert report.captures <= 3 and not report.fallback_reasons and report.disabled is None, report
