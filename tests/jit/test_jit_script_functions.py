"""`@torch.jit.script` functions of user code (ParityBench's RWKV `MHA_rotary` scripts its rotary
embedding): their Python form is interpreted, so the call is one graph, equal to eager; where the
Python form raises, TorchScript runs the call as eager code does."""

from __future__ import annotations

import torch
import torch.nn as nn
from jit_helpers import assert_one_graph, check_program

from jitlab.jit import jit


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), -1)


@torch.jit.script
def apply_rotary(q, k, cos, sin):
    cos, sin = cos[..., : q.shape[-2], :], sin[..., : q.shape[-2], :]
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class Rotary(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(8, 8)
        self.key = nn.Linear(8, 8)
        angles = torch.arange(16.0)[:, None] * torch.arange(1.0, 9.0)[None, :] / 8
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, x):
        q, k = apply_rotary(self.query(x), self.key(x), self.cos, self.sin)
        return q @ k.transpose(-2, -1)


def test_a_scripted_function_is_one_graph_equal_to_eager():
    jitted = check_program(Rotary, [((torch.randn(2, 5, 8),), {}) for _ in range(3)])
    assert_one_graph(jitted)
    assert "@torch.jit.script function apply_rotary" in str(jitted.explain())


def test_its_gradients_equal_torchscripts():
    model = Rotary()
    jitted = jit(model)
    for _ in range(3):
        x = torch.randn(2, 5, 8, requires_grad=True)
        jitted(x).sum().backward()
        got = x.grad.clone()
        x.grad = None
        model(x).sum().backward()
        assert torch.allclose(got, x.grad, atol=1e-6)


@torch.jit.script
def checked_scale(x, limit: float):
    if bool(x.abs().max() > limit):
        raise ValueError("too large")
    return x * 2


def scale_or_report(x):
    try:
        return checked_scale(x, 10.0), "ok"
    except Exception as exc:  # what the program sees must be what eager code sees
        return x, type(exc).__name__


def test_a_raise_in_the_python_form_gives_torchscripts_exception():
    inputs = [((torch.full((3,), v),), {}) for v in (1.0, 100.0, 2.0, 200.0)]
    jitted = check_program(lambda: scale_or_report, inputs)
    _, seen = jitted(torch.full((3,), 100.0))
    assert seen == scale_or_report(torch.full((3,), 100.0))[1] != "ValueError"


def test_a_scripted_function_without_its_python_form_runs_eagerly_with_the_reason():
    @torch.jit.script
    def plain(x):
        return x + 1

    del plain._torchdynamo_inline  # as a scripted function from a file TorchScript compiled

    def f(x):
        return plain(x) * 2

    jitted = check_program(lambda: f, [((torch.randn(3),), {}) for _ in range(2)])
    assert any("unknown origin" in r for r in jitted.explain().fallbacks)


class Backproject(torch.jit.ScriptModule):
    """nianticlabs/simplerecon's `BackprojectDepth`: a `ScriptModule` with a `script_method`, whose
    class attribute `forward` is a descriptor that only works through an instance."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.full((4,), 0.5))

    @torch.jit.script_method
    def forward(self, depth):
        return depth * self.scale + 1.0


class UsesScriptModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.backproject = Backproject()

    def forward(self, x):
        return self.backproject(self.lin(x)).relu()


def test_script_modules_run_in_torchscript_at_a_break():
    """Looking up such a module's `forward` on its class raised inside jitlab.jit (an internal
    error, the call ran eagerly for good); the module now runs natively, a graph break."""
    jitted = check_program(UsesScriptModule, [((torch.randn(2, 4),), {}) for _ in range(3)])
    report = jitted.explain()
    assert report.fallbacks == ()
    assert any("module Backproject is called natively" in b for b in report.breaks), report.breaks
    assert sum(g.hits for g in report.graphs) >= 2
