"""A whole training step inside `jitlab.jit`: the forward, `loss.backward()`, the optimizer's step and
`zero_grad` captured as one graph (backend "eager": the same operations in the same order as eager
code, so every loss, parameter, gradient and optimizer state is bitwise eager's at every step)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
from training_step_helpers import OPTIMIZERS, Mlp, batch, plain_step, run_steps, scaled_batch

from jitlab.jit import jit


def one_graph_hits(jitted, first_hit: int, steps: int = 6) -> None:
    report = jitted.explain()
    assert not report.fallbacks, report.fallbacks
    assert report.graphs_per_call == 1
    assert sum(g.hits for g in report.graphs) == steps - first_hit
    assert report.captures == first_hit


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_whole_step_is_one_graph_and_bitwise_eager(optimizer):
    jitted = run_steps(plain_step, optimizer)
    # the optimizer's lazily made state is made before the capture reads it, so the first capture
    # serves the next steps; SGD's momentum buffers are made by the first step's arithmetic itself
    one_graph_hits(jitted, first_hit=2 if "momentum" in optimizer or "nesterov" in optimizer else 1)


@pytest.mark.parametrize("optimizer", ["adamw", "adamw-foreach", "adamw-model.zero_grad"])
@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_first_both_ways(set_to_none, optimizer):
    zeroed_by_model = optimizer.endswith("model.zero_grad")
    optimizer = optimizer.removesuffix("-model.zero_grad")

    def make_step(model, opt, sched):
        def step(x, y):
            (model if zeroed_by_model else opt).zero_grad(set_to_none=set_to_none)
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    jitted = run_steps(make_step, optimizer)
    # set_to_none: every gradient is set to None without testing it first (training_calls.py), so
    # the first capture serves; to zeros: nothing to zero on the first step, a second capture
    one_graph_hits(jitted, first_hit=1 if set_to_none else 2)


def test_changing_learning_rate_becomes_a_graph_input():
    def make_step(model, opt, sched):
        train = plain_step(model, opt, sched)

        def step(x, y, lr):
            for group in opt.param_groups:
                group["lr"] = lr
            return train(x, y)

        return step

    jitted = run_steps(make_step, "adam", steps=8, arguments=lambda i: (*batch(i), 0.01 / (i + 1)))
    one_graph_hits(jitted, first_hit=2, steps=8)


@pytest.mark.parametrize(
    "schedule",
    [
        lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda epoch: 1.0 / (epoch + 1)),
        lambda o: torch.optim.lr_scheduler.StepLR(o, 2, 0.5),
    ],
    ids=["lambda", "step"],
)
@pytest.mark.parametrize("first", [False, True], ids=["scheduler-last", "scheduler-first"])
def test_scheduler_runs_at_a_graph_break_and_learning_rate_is_an_input(schedule, first):
    def make_step(model, opt, sched):
        def step(x, y):
            if first:  # the learning rate is read after the break: an input at once
                sched.step()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            if not first:
                sched.step()
            opt.zero_grad()
            return loss

        return step

    jitted = run_steps(make_step, "adamw", steps=8, make_scheduler=schedule)
    report = jitted.explain()
    assert not report.fallbacks and report.captures == (1 if first else 2) and report.deopts == 0
    assert report.graphs_per_call == (1 if first else 2)  # nothing to compute before a first break
    assert {"learning-rate scheduler" in b.reason and b.lineno is not None for b in report.graph_breaks} == {
        True
    }


@pytest.mark.parametrize("foreach", [None, True])
def test_clip_grad_norm(foreach):
    def make_step(model, opt, sched):
        def step(x, y):
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05, foreach=foreach)
            opt.step()
            opt.zero_grad()
            return loss, norm

        return step

    jitted = run_steps(make_step, "sgd")
    one_graph_hits(jitted, first_hit=1)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_autograd_grad_and_retain_graph(backend):
    def make_step(model, opt, sched):
        def step(x, y):
            out = model(x)
            loss = nn.functional.mse_loss(out, y)
            (gx,) = torch.autograd.grad(loss, x, retain_graph=True)
            loss.backward(retain_graph=True)
            (loss * 0.5).backward()  # accumulates into the same .grad
            opt.step()
            opt.zero_grad()
            return loss, gx

        return step

    jitted = run_steps(
        make_step, "adam", backend=backend, arguments=lambda i: (batch(i)[0].requires_grad_(), batch(i)[1])
    )
    one_graph_hits(jitted, first_hit=1)


def test_gradient_read_before_backward_is_guarded():
    """`p.grad` decides a branch: its presence before the call is guarded, so a caller that clears
    the gradients between calls gets the other branch, as eagerly (not the captured one)."""
    torch.manual_seed(0)
    model = Mlp()
    calls = []

    def step(x, y):
        if model.fc1.weight.grad is None:
            calls.append("fresh")
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    jitted = jit(step, backend="eager")
    expected = []
    for i in range(6):
        if i % 2 == 0:
            model.zero_grad(set_to_none=True)
        expected.append("fresh" if i % 2 == 0 else None)
        before = len(calls)
        jitted(*batch(i))
        assert (calls[before] if len(calls) > before else None) == expected[-1], i
    assert not jitted.explain().fallbacks


def test_training_step_explain_names_the_parts():
    jitted = run_steps(plain_step, "adam", steps=2)
    (note,) = [n for n in jitted.explain().graphs[0].notes if n.startswith("training step")]
    assert (
        "forward 4 operations, 1 backward pass(es)" in note
    )  # fc1, tanh, fc2, mse_loss and "training_step_helpers.py:" in note
    assert "['exp_avg']" in str(jitted.explain())  # the optimizer's state is guarded as a graph input


@pytest.mark.parametrize("decided_on", ["loss", "gradient"])
def test_decision_on_the_loss_or_on_a_gradient(decided_on):
    """`if loss.item() > 1` before the backward pass is re-checked before the graph runs (the check
    prefix takes only the forward, not the optimizer's later updates of what it read); a decision on
    a gradient cannot be (the backward pass makes it): the graph is split after it, and the other
    outcome resumes from there."""

    def make_step(model, opt, sched):
        def step(x, y):
            loss = nn.functional.mse_loss(model(x), y)
            if decided_on == "loss" and loss.item() > 1.0:
                loss = loss * 0.5
            loss.backward()
            if decided_on == "loss" or model.fc1.weight.grad.norm() > 0.5:
                opt.step()
            opt.zero_grad()
            return loss

        return step

    jitted = run_steps(make_step, "adam", steps=8, arguments=scaled_batch)
    report = jitted.explain()
    assert not report.fallbacks
    if decided_on == "loss":
        assert report.captures == 2 and sum(g.hits for g in report.graphs) == 6
    else:
        assert sum(g.hits for g in report.graphs) + report.deopts >= 6


@pytest.mark.parametrize("optimizer", ["sgd-momentum", "adamw", "adam-foreach-amsgrad"])
def test_compiling_backend_cuts_the_step_into_parts(optimizer):
    """aot_eager: the forward and the optimizer's update are compiled, the backward pass and the
    gradients run between them; the values are eager's up to rounding (the optimizer takes the
    path it keeps for compilers, as under torch.compile)."""
    jitted = run_steps(plain_step, optimizer, backend="aot_eager")
    report = jitted.explain()
    assert not report.fallbacks and all(g.backend_note is None for g in report.graphs)
    assert sum(g.hits for g in report.graphs) >= 4


@pytest.mark.slow
def test_inductor_training_step():
    jitted = run_steps(plain_step, "adamw", steps=4, backend="inductor")
    report = jitted.explain()
    assert not report.fallbacks and report.graphs[0].backend_note is None and report.graphs[0].hits == 3


def test_float_read_from_outside_becomes_an_input_after_it_changed():
    """Not only learning rates: any float a global holds that changed between captures is a graph
    input from the second capture on; the outcome of a branch decided on it is re-checked."""
    state = {"temperature": 0.5, "double": 1.0}

    def fn(x):
        t = state["temperature"]
        return torch.softmax(x / t, dim=-1) * (2.0 if state["double"] > 1.5 else 1.0)

    jitted = jit(fn, backend="eager")
    x = torch.randn(3, 4)
    for i in range(6):
        state["temperature"] = 0.5 + i * 0.25
        state["double"] = 1.0 + i * 0.2  # decides a branch: its outcome is re-checked, flips at call 3
        assert torch.equal(jitted(x), fn(x))
    report = jitted.explain()
    assert report.captures == 3 and sum(g.hits for g in report.graphs) >= 2 and not report.fallbacks


def test_transformers_warning_once_is_replayed_not_a_fallback(caplog):
    transformers = pytest.importorskip("transformers")
    logger = transformers.utils.logging.get_logger("jitlab.test.warn_once")

    def fn(x):
        logger.warning_once("jitlab test: warned once")
        return x * 2

    jitted = jit(fn, backend="eager")
    for _ in range(3):
        assert torch.equal(jitted(torch.ones(2)), torch.full((2,), 2.0))
    report = jitted.explain()
    assert not report.fallbacks and report.graphs[0].hits == 2 and report.graphs_per_call == 1


def _accumulating(model, opt, sched):
    def step(x, y, do_step):
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        if do_step:  # gradient accumulation: the optimizer steps every other call
            opt.step()
            opt.zero_grad()
        return loss

    return step


def _with_hooks(model, opt, sched):
    model.fc1.weight.register_hook(lambda g: g * 0.5)
    model.fc2.register_full_backward_hook(lambda module, grad_in, grad_out: None)
    return _accumulating(model, opt, sched)


def _checkpointed(model, opt, sched):
    def step(x, y, do_step):
        h = torch.utils.checkpoint.checkpoint(model.fc1, x, use_reentrant=False)
        loss = nn.functional.mse_loss(model.fc2(torch.tanh(h)), y)
        loss.backward(inputs=[model.fc1.weight, model.fc2.weight])
        opt.step()
        opt.zero_grad()
        return loss

    return step


def _gradient_penalty(model, opt, sched):
    def step(x, y, do_step):
        x = x.requires_grad_()
        out = model(x)
        (gx,) = torch.autograd.grad(out.sum(), x, create_graph=True)  # double backward
        loss = nn.functional.mse_loss(out, y) + gx.pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("make_step", [_accumulating, _with_hooks, _checkpointed, _gradient_penalty])
def test_accumulation_hooks_checkpointing_double_backward(make_step, backend):
    """Hooks registered outside the call make the backward pass a graph break (user code runs
    natively inside autograd, what is read after it is guarded anew); a double backward is not
    compiled by AOTAutograd (the graph runs as it is)."""
    jitted = run_steps(
        make_step, "adamw", steps=8, backend=backend, arguments=lambda i: (*batch(i), i % 2 == 1)
    )
    report = jitted.explain()
    assert not report.fallbacks and report.captures == 2 and sum(g.hits for g in report.graphs) == 6
    if make_step is _with_hooks:
        assert any("backward hooks" in b.reason for b in report.graph_breaks)


@pytest.mark.parametrize("optimizer", ["sgd-momentum", "adam"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_batch_size_changing_between_steps(backend, optimizer):
    """New batch sizes: symbolic sizes with the eager backend (Adam's step counts, read with
    `.item()`, decide no size) and with a compiling backend (each part compiled for every size,
    test_jit_training_compiled.py); never a wrong step, and grad mode is left on (a failed run on
    fake tensors used to leave it off)."""

    def arguments(i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(2 + i % 3, 6, generator=g), torch.randn(2 + i % 3, 3, generator=g)

    jitted = run_steps(plain_step, optimizer, steps=7, backend=backend, arguments=arguments)
    report = jitted.explain()
    assert torch.is_grad_enabled() and not report.fallbacks
    assert report.captures == 2 and report.graphs[-1].symbolic_sizes


def _token_batch(i):
    return {"input_ids": torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(i))}


def _image_batch(i):
    return {"pixel_values": torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(i))}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["GPT2LMHeadModel", "ViTForImageClassification"])
def test_transformers_training_step_is_bitwise_eager(name):
    """GPT-2 with labels (its loss function logs with warning_once, which kept it from any cache
    entry) and ViT (whose first call sets config.problem_type): the whole step with AdamW."""
    transformers = pytest.importorskip("transformers")
    if name == "GPT2LMHeadModel":
        config = transformers.GPT2Config(vocab_size=64, n_embd=16, n_layer=1, n_head=2, n_positions=16)
        inputs = _token_batch
    else:
        config = transformers.ViTConfig(
            image_size=16, patch_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=32, num_labels=3,
        )  # fmt: skip
        inputs = _image_batch
    for key, value in config.to_dict().items():
        if "drop" in key and isinstance(value, float):
            setattr(config, key, 0.0)

    def make_model():
        return getattr(transformers, name)(config).train()

    def make_step(model, opt, sched):
        def step(batch):
            labels = batch["input_ids"] if "input_ids" in batch else torch.tensor([0, 2])
            loss = model(**batch, labels=labels).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return step

    jitted = run_steps(make_step, "adamw", steps=4, make_model=make_model, arguments=lambda i: (inputs(i),))
    report = jitted.explain()
    assert not report.fallbacks and report.graphs_per_call == 1
    assert report.captures == (1 if name == "GPT2LMHeadModel" else 2)  # ViT: problem_type set on call 1


def test_hook_registered_in_the_call_is_a_graph_break():
    def make_step(model, opt, sched):
        def step(x, y):
            out = model(x)
            out.register_hook(lambda g: g * 2.0)
            loss = nn.functional.mse_loss(out, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return step

    jitted = run_steps(make_step, "sgd", steps=4)  # bitwise eager: the hook doubles the gradient
    report = jitted.explain()
    assert not report.fallbacks and sum(g.hits for g in report.graphs) == 3
    assert {b.reason for b in report.graph_breaks} == {
        "library function Tensor.register_hook calls user code back"
    }


class SignMomentum(torch.optim.Optimizer):
    """A user's optimizer: its own lazily made state, interpreted like any user code."""

    def __init__(self, params, lr=0.01, beta=0.9):
        super().__init__(params, {"lr": lr, "beta": beta})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "buf" not in state:
                    state["buf"] = torch.zeros_like(p)
                state["buf"].mul_(group["beta"]).add_(p.grad)
                p.add_(state["buf"].sign(), alpha=-group["lr"])


def test_a_users_optimizer():
    OPTIMIZERS["sign-momentum"] = SignMomentum
    try:
        jitted = run_steps(plain_step, "sign-momentum", steps=6)
    finally:
        del OPTIMIZERS["sign-momentum"]
    report = jitted.explain()
    # the first step adds the optimizer's state (a missing key of its defaultdict), so it is not
    # cached; the second is captured and serves the rest
    assert not report.fallbacks and sum(g.hits for g in report.graphs) == 4


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_output_requiring_grad_beside_the_loss(backend):
    """The step returns a value that requires grad besides its loss, and the caller differentiates
    it after each call. Compiled with the loss as one AOTAutograd node, the loss's backward ran the
    backward of both (a zero gradient where eager leaves None), and the caller's raised "backward
    through the graph a second time" (fuzz seed 8, aot_eager): such a part is not compiled."""

    def make_step(model, opt, sched):
        def step(x, y):
            h = x * 1.0
            loss = nn.functional.mse_loss(model(h.detach()), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return h + loss.detach()

        return step

    torch.manual_seed(0)
    models = [Mlp()]
    models.append(copy.deepcopy(models[0]))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in models]
    eager, jitted = (
        make_step(models[0], opts[0], None),
        jit(make_step(models[1], opts[1], None), backend=backend),
    )
    for i in range(4):
        x, y = batch(i)
        xs = [x.clone().requires_grad_(), x.clone().requires_grad_()]
        outs = [eager(xs[0], y), jitted(xs[1], y)]
        for out in outs:
            out.pow(2).sum().backward()
        assert torch.equal(outs[0], outs[1]) or backend != "eager"
        torch.testing.assert_close(xs[0].grad, xs[1].grad)
        for p, q in zip(models[0].parameters(), models[1].parameters()):
            torch.testing.assert_close(p, q)
    assert not jitted.explain().fallbacks and sum(g.hits for g in jitted.explain().graphs) == 3
