"""Modules with forward hooks, weight norm (old and parametrization), spectral norm and custom
parametrizations: captured as one graph, equal to eager in outputs, gradients and module state over
several calls, with the hook dicts guarded (adding or removing a hook is seen)."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.utils.parametrize as parametrize
from grad_helpers import check_grads

from jitlab.jit import jit

CALLS: list = []


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)
        self.scale = 2.0
        self.seen = 0
        self.fc.register_forward_pre_hook(lambda m, args: (args[0] * self.scale,))
        self.fc.register_forward_hook(self.after, with_kwargs=True)
        self.out.register_forward_hook(self.count, always_call=True)
        self.out.register_forward_pre_hook(self.kw_pre, with_kwargs=True)

    def after(self, module, args, kwargs, output):
        return torch.relu(output) + args[0].mean()

    def count(self, module, args, output):
        self.seen += 1  # a counter on the model: recaptured every call would defeat caching

    def kw_pre(self, module, args, kwargs):
        return (args[0] - 0.1,), kwargs

    def forward(self, x):
        return self.out(self.fc(x))


def test_forward_hooks_and_pre_hooks_are_interpreted():
    jitted = check_grads(Hooked, lambda i: (torch.randn(3, 4),), calls=3)
    report = jitted.explain()
    assert not report.fallbacks
    # the counter changes every call, so each call is a new capture of the same program; the
    # hooks themselves are captured and replayed
    assert report.captures == 3 and all(g.op_count > 2 for g in report.graphs)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.handle = self.fc.register_forward_hook(lambda m, a, out: out * 3)

    def forward(self, x):
        return self.fc(x)


def test_adding_and_removing_hooks_is_seen_by_the_guards():
    def change(model, i):
        if i == 2:
            model.handle.remove()
        if i == 3:
            model.fc.register_forward_pre_hook(lambda m, a: (a[0] + 1,))

    jitted = check_grads(Scaled, lambda i: (torch.randn(2, 4),), calls=5, between=change)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 3 and sum(g.hits for g in report.graphs) == 2


class WeightNormOld(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.utils.weight_norm(nn.Conv1d(3, 4, 3, padding=1))
        self.fc = nn.utils.weight_norm(nn.Linear(4, 2), dim=None)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean(-1))


class WeightNormNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(3, 4, 3, padding=1))
        self.fc = nn.utils.parametrizations.weight_norm(nn.Linear(4, 2))

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean(-1))


class SpectralOld(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.utils.spectral_norm(nn.Linear(4, 4))

    def forward(self, x):
        return self.fc(x)


class SpectralNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 4), n_power_iterations=2)

    def forward(self, x):
        return self.fc(x)


class Symmetric(nn.Module):
    def forward(self, w):
        return w.triu() + w.triu(1).transpose(0, 1)


class PositiveScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.floor = 0.1

    def forward(self, w):
        return nn.functional.softplus(w) + self.floor


class CustomParametrized(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        parametrize.register_parametrization(self.fc, "weight", Symmetric())
        parametrize.register_parametrization(self.fc, "bias", PositiveScale())

    def forward(self, x):
        return self.fc(x) + self.fc.weight.sum()


@pytest.mark.parametrize("make", [WeightNormOld, WeightNormNew, CustomParametrized], ids=lambda m: m.__name__)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_weight_norm_and_parametrizations(make, backend):
    shape = (2, 3, 5) if make is not CustomParametrized else (2, 4)
    jitted = check_grads(make, lambda i: (torch.randn(*shape),), calls=4, backend=backend)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 1 and report.graphs[0].hits == 3


@pytest.mark.parametrize("make", [SpectralOld, SpectralNew], ids=lambda m: m.__name__)
@pytest.mark.parametrize("training", [True, False])
def test_spectral_norm_state_follows_eager(make, training):
    """In training mode every call runs power iterations that update buffers in place: after N calls
    the buffers must be those of eager execution (each call updates them exactly once)."""

    def build():
        model = make()
        model.train(training)
        return model

    jitted = check_grads(build, lambda i: (torch.randn(3, 4),), calls=4)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 1 and report.graphs[0].hits == 3


def test_parametrization_cache_context_is_guarded():
    model = CustomParametrized()
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 4)
    expected = model(x)
    assert torch.allclose(jitted(x), expected)
    with parametrize.cached():
        assert torch.allclose(jitted(x), model(x))
    report = jitted.explain()
    # the cache switch is a guarded library global: the first graph is not used inside the context
    # (the cached call writes torch's parametrization cache, which is not replayed)
    assert report.graphs[0].hits == 0 and report.captures == 2 and "unknown origin" in report.fallbacks[0]


def test_parameters_swapped_after_removing_parametrization_recapture():
    model = CustomParametrized()
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 4)
    assert torch.allclose(jitted(x), model(x))
    parametrize.remove_parametrizations(model.fc, "bias")
    assert torch.allclose(jitted(x), model(x))
    assert len(jitted.explain().graphs) == 2


class BackwardHooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.fc.register_full_backward_hook(lambda m, gin, gout: CALLS.append("bw"))

    def forward(self, x):
        return self.fc(x)


def test_backward_hooks_run_with_the_module_called_natively():
    CALLS.clear()
    jitted = check_grads(BackwardHooked, lambda i: (torch.randn(2, 4),), calls=2)
    assert CALLS == ["bw"] * 4  # the hook ran on every backward, eager and jitted
    # the hooked module runs natively between graphs (a graph break), its hooks attached by torch
    (brk,) = jitted.explain().graph_breaks
    assert "backward hooks" in brk.reason and brk.function == "BackwardHooked.forward"
