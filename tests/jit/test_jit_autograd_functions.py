"""Custom torch.autograd.Functions under jitlab.jit: one graph node, the user's backward kept.

Every test compares forward outputs, input gradients and parameter gradients with eager execution
over several calls, for the eager backend and "aot_eager" (AOTAutograd retraces the graph: the
user's backward must survive it); "inductor" compiles C++ and runs in the slow tests only.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from grad_helpers import check_grads
from torch.autograd.function import once_differentiable

from jitlab.jit import jit

EPS = 1e-3
BACKWARD_SCALE = 1.0
FORWARD_LOG: list = []


class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * (s * (1 + x * (1 - s)))


class RoundSTE(torch.autograd.Function):
    """Straight-through estimator: the backward is NOT the derivative of the forward (which is 0)."""

    @staticmethod
    def forward(ctx, x, bits):
        scale = 2**bits - 1
        return torch.round(x.clamp(0, 1) * scale) / scale

    @staticmethod
    def backward(ctx, grad):
        return grad * BACKWARD_SCALE, None


class ClampGrad(torch.autograd.Function):
    """Clamp whose backward lets a tenth of the gradient through where the input was clamped."""

    @staticmethod
    def forward(ctx, x, low: float, high: float):
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high
        return x.clamp(low, high)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        inside = (x >= ctx.low) & (x <= ctx.high)
        return torch.where(inside, grad, grad * 0.1), None, None


class ScaledMul(torch.autograd.Function):
    """Uses needs_input_grad to skip gradients nobody asked for."""

    @staticmethod
    def forward(ctx, a, b, alpha):
        ctx.save_for_backward(a, b)
        ctx.alpha = alpha
        return a * b * alpha

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = grad * b * ctx.alpha * 2 if ctx.needs_input_grad[0] else None
        gb = grad * a * ctx.alpha if ctx.needs_input_grad[1] else None
        return ga, gb, None


class TopIndex(torch.autograd.Function):
    """Two outputs, the second not differentiable."""

    @staticmethod
    def forward(ctx, x):
        values, idx = x.max(dim=-1)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, idx)
        return values * 2, idx

    @staticmethod
    def backward(ctx, grad_values, grad_idx):
        x, idx = ctx.saved_tensors
        out = torch.zeros_like(x)
        out.scatter_(-1, idx.unsqueeze(-1), (grad_values * 3).unsqueeze(-1))
        return out


class Mish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.tanh(nn.functional.softplus(x))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        sp = nn.functional.softplus(x)
        tsp = torch.tanh(sp)
        return grad * (tsp + x * torch.sigmoid(x) * (1 - tsp * tsp))


class SetupContextSquare(torch.autograd.Function):
    """The new style: forward without ctx, setup_context separately."""

    @staticmethod
    def forward(x, power=2):
        return x**power

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, power = inputs
        ctx.save_for_backward(x)
        ctx.power = power

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.power * x ** (ctx.power - 1) + 0.5, None


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad.neg() * ctx.alpha, None


class EpsLog(torch.autograd.Function):
    """Reads a global in forward (guarded) and in backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(x.abs() + EPS)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sign(x) / (x.abs() + EPS) * BACKWARD_SCALE


class Quantised(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.bits = 3
        self.fc2 = nn.Linear(6, 4)

    def forward(self, x):
        h = Swish.apply(self.fc(x))
        h = RoundSTE.apply(torch.sigmoid(h), self.bits)
        h = ClampGrad.apply(self.fc2(h), -0.2, 0.2)
        return Mish.apply(h) + SetupContextSquare.apply(h, 3)


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(5))

    def forward(self, x):
        values, idx = TopIndex.apply(x * self.w)
        return ScaledMul.apply(values, values.detach() + 1, 0.5), idx, GradReverse.apply(x, 0.3)


def inputs(*shape):
    return lambda i: (torch.randn(*shape, generator=torch.Generator().manual_seed(i)),)


BACKENDS = ["eager", "aot_eager"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_functions_with_custom_backward_train_like_eager(backend):
    jitted = check_grads(Quantised, inputs(3, 6), calls=4, backend=backend)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 1 and report.graphs[0].hits == 3
    assert "apply_function" in report.graphs[0].code  # one node per Function, not its operations
    assert "round" not in report.graphs[0].code


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_differentiable_outputs_needs_input_grad_and_views(backend):
    jitted = check_grads(TwoInputs, inputs(4, 5), calls=3, backend=backend)
    assert jitted.explain().graphs[0].hits == 2


def test_only_some_inputs_require_grad():
    def f(a, b):
        return ScaledMul.apply(a, b.detach(), 2.0).sum(-1)

    check_grads(lambda: f, lambda i: (torch.randn(3, 3), torch.randn(3, 3)), calls=3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_globals_read_by_forward_and_backward_are_guarded(backend):
    global EPS, BACKWARD_SCALE

    def change(model, i):
        global EPS, BACKWARD_SCALE
        EPS = (1e-3, 1e-3, 0.5, 0.5)[i]
        BACKWARD_SCALE = (1.0, 1.0, 1.0, 3.0)[i]

    try:
        jitted = check_grads(
            lambda: lambda x: EpsLog.apply(x) * 2, inputs(4), calls=4, backend=backend, between=change
        )
    finally:
        EPS, BACKWARD_SCALE = 1e-3, 1.0
    report = jitted.explain()
    assert not report.fallbacks
    # EPS changes at call 2 (forward); BACKWARD_SCALE at call 3 is read by backward, which the eager
    # backend runs natively on every call, while a compiled backward must be re-made
    assert len(report.graphs) == (2 if backend == "eager" else 3)


class Logged(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        FORWARD_LOG.append(1)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_forward_with_outside_effect_falls_back_with_reason():
    FORWARD_LOG.clear()
    jitted = check_grads(lambda: lambda x: Logged.apply(x), inputs(3), calls=3)
    assert len(FORWARD_LOG) == 6  # eager and jit ran forward three times each
    report = jitted.explain()
    assert report.fallbacks and "Logged.forward changes outside state" in report.fallbacks[0]


@pytest.mark.slow
def test_custom_backward_with_inductor():
    jitted = check_grads(Quantised, inputs(3, 6), calls=3, backend="inductor")
    report = jitted.explain()
    assert not report.fallbacks and report.graphs[0].hits == 2 and report.graphs[0].backend_note is None


class ClassmethodScale(torch.autograd.Function):
    """forward and backward as classmethods (entmax's `Entmax15Function`, ParityBench): the class
    is their first argument, and the backward is not the derivative (it reads a class attribute)."""

    factor = 3.0

    @classmethod
    def forward(cls, ctx, x, dim=-1):
        ctx.dim = dim
        shifted = x - x.max(dim=dim, keepdim=True).values
        y = torch.clamp(shifted / 2 + 0.5, min=0) ** 2
        ctx.save_for_backward(y)
        return y * cls.factor

    @classmethod
    def backward(cls, ctx, grad):
        (y,) = ctx.saved_tensors
        root = y.sqrt()
        dx = grad * root
        dx = dx - (dx.sum(ctx.dim) / (root.sum(ctx.dim) + 1e-6)).unsqueeze(ctx.dim) * root
        return dx * cls.factor, None


@pytest.mark.parametrize("backend", BACKENDS)
def test_classmethod_forward_and_backward_are_one_node_with_the_users_backward(backend):
    def program():
        lin = nn.Linear(5, 5)
        return lambda x: ClassmethodScale.apply(lin(x), -1).sum(0) * 2

    jitted = check_grads(program, inputs(3, 5), calls=3, backend=backend)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 1 and report.graphs[0].hits == 2
    assert "apply_function" in report.graphs[0].code and "clamp" not in report.graphs[0].code


def test_a_class_attribute_read_by_a_classmethod_forward_is_guarded():
    jitted = jit(lambda x: ClassmethodScale.apply(x))
    x = torch.randn(2, 4)
    first = jitted(x)
    try:
        ClassmethodScale.factor = 5.0
        assert torch.allclose(jitted(x), first * 5.0 / 3.0)
    finally:
        ClassmethodScale.factor = 3.0
    assert not jitted.explain().fallbacks


class StaticBackwardScale(torch.autograd.Function):
    scale = 1.0

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * StaticBackwardScale.scale


class ClassBackwardScale(torch.autograd.Function):
    scale = 1.0

    @classmethod
    def forward(cls, ctx, x):
        return x * 2

    @classmethod
    def backward(cls, ctx, grad):
        return grad * cls.scale


@pytest.mark.parametrize("function", [StaticBackwardScale, ClassBackwardScale])
@pytest.mark.parametrize("backend", BACKENDS)
def test_class_attributes_read_only_by_backward_are_guarded(function, backend):
    """A compiled backward keeps the class attribute it read: a change must make a new graph."""

    def change(model, i):
        function.scale = (1.0, 1.0, 4.0, 4.0)[i]

    try:
        jitted = check_grads(
            lambda: lambda x: function.apply(x).sum(0), inputs(3, 5), calls=4, backend=backend, between=change
        )
    finally:
        function.scale = 1.0
    assert not jitted.explain().fallbacks
