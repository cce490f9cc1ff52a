"""The public API: bad input, exceptions from user code, explain(), the module wrapper, backends,
data-dependent programs and fallbacks."""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn as nn

import jitlab
from jitlab.errors import UserError
from jitlab.jit import jit


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.scale = 0.5

    def forward(self, x):
        return torch.relu(self.fc(x)) * self.scale


def test_reexported_from_jitlab():
    from jitlab import jit as top_level

    assert "jit" in jitlab.__all__
    for entry in (top_level, jitlab.jit):  # the function, or the package that forwards calls to it
        model = Small()
        compiled = entry(model, backend="eager")
        x = torch.randn(3, 8)
        assert torch.equal(compiled(x), model(x))
        assert compiled.explain().graph_count == 1


@pytest.mark.parametrize("bad", [42, "f", None, [lambda x: x]])
def test_not_a_function_or_module(bad):
    with pytest.raises(UserError, match="expects a Python function or a torch.nn.Module"):
        jit(bad)


def test_unknown_backend_name():
    with pytest.raises(UserError, match="unknown backend"):
        jit(Small(), backend="no-such-backend")


@pytest.mark.parametrize("version", [(3, 10), (3, 14)])
def test_other_python_version_is_refused(version):
    from jitlab.jit.python_support import check_python

    with pytest.raises(UserError) as info:
        check_python(version)
    message = str(info.value)
    assert "\n" not in message
    assert "3.11, 3.12, 3.13" in message and f"this is Python {version[0]}.{version[1]}" in message


def test_supported_pythons_are_the_interpreters_versions():
    import sys

    from jitlab.jit.interpreter.opcodes import SUPPORTED_VERSIONS
    from jitlab.jit.python_support import SUPPORTED_PYTHONS, check_python

    assert SUPPORTED_PYTHONS == SUPPORTED_VERSIONS
    assert sys.version_info[:2] in SUPPORTED_PYTHONS  # the tests run on a supported Python
    check_python()


def test_jit_refuses_an_unsupported_python(monkeypatch):
    import jitlab.jit.python_support as support

    monkeypatch.setattr(support, "SUPPORTED_PYTHONS", ((3, 99),))
    with pytest.raises(UserError, match=r"runs on CPython 3\.99 .* this is Python 3\.\d+"):
        jit(Small())
    with pytest.raises(UserError, match="3.99"):
        jitlab.jit(Small())


class Raises(nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:
            raise ValueError("batch too large")
        return {1: 1.0}[x.shape[0]] * x


def test_user_exception_propagates_unchanged():
    jitted = jit(Raises(), backend="eager")
    with pytest.raises(ValueError, match="batch too large"):
        jitted(torch.ones(3))
    with pytest.raises(KeyError):
        jitted(torch.ones(2))
    assert torch.equal(jitted(torch.ones(1)), torch.ones(1))
    assert torch.equal(jitted(torch.ones(1)), torch.ones(1))
    with pytest.raises(ValueError, match="batch too large"):
        jitted(torch.ones(3))


def test_runtime_error_from_torch_propagates():
    def f(a, b):
        return a @ b

    jitted = jit(f, backend="eager")
    with pytest.raises(RuntimeError):
        jitted(torch.ones(2, 3), torch.ones(2, 3))


def test_module_wrapper_exposes_module():
    model = Small()
    jitted = jit(model, backend="eager")
    assert jitted.module is model
    assert jitted.fc is model.fc and jitted.scale == 0.5
    assert list(jitted.parameters()) == list(model.parameters())
    x = torch.randn(2, 8)
    assert torch.equal(jitted(x), model(x))
    assert torch.equal(jitted.forward(x), model(x))
    jitted.scale = 3.0
    assert model.scale == 3.0
    assert torch.equal(jitted(x), model(x))


def test_explain_reports_graphs_guards_and_fallbacks():
    model = Small()
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 8)
    jitted(x)
    jitted(x)
    report = jitted.explain()
    assert report.graph_count == 1 and report.breaks == () and report.fallbacks == ()
    graph = report.graphs[0]
    assert graph.op_count == 3 and graph.hits == 1
    text = str(report)
    assert "self.scale == 0.5" in text
    assert "TENSOR_MATCH: args[0]: torch.float32 (2, 8)" in text
    assert "linear" in graph.code

    def draws(x):
        if random.randint(0, 1) == 1:  # Python reads the drawn int: cannot be cached
            return x * 2
        return x

    fallback = jit(draws, backend="eager")
    random.seed(3)
    got = [fallback(torch.ones(1)) for _ in range(4)]
    random.seed(3)
    assert all(torch.equal(g, draws(torch.ones(1))) for g in got)
    report = fallback.explain()
    assert report.graph_count == 0 and report.disabled
    assert "random" in report.fallbacks[0]


def test_python_random_draws_stay_in_the_graph():
    def noisy(x):
        return x + random.random() * random.uniform(1.0, 2.0)

    jitted = jit(noisy, backend="eager")
    random.seed(7)
    got = [jitted(torch.zeros(2)) for _ in range(4)]
    random.seed(7)
    expected = [noisy(torch.zeros(2)) for _ in range(4)]
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
    assert len({float(g[0]) for g in got}) == 4  # a fresh draw on every call
    report = jitted.explain()
    assert report.graph_count == 1 and report.graphs[0].hits == 3


def test_data_dependent_branch_specialises_and_rechecks():
    def f(x):
        if x.sum() > 0:
            return x * 2, "positive"  # the arms differ in Python: one entry per outcome
        return x - 1, "negative"

    jitted = jit(f, backend="eager")
    pos, neg = torch.ones(3), -torch.ones(3)
    for x in (pos, pos, neg, neg, pos):
        got, expected = jitted(x), f(x)
        assert torch.equal(got[0], expected[0]) and got[1] == expected[1]
    report = jitted.explain()
    assert report.graph_count == 2
    assert any("__bool__" in b for b in report.breaks)


def test_data_dependent_branch_with_tensor_arms_merges_both_outcomes():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    jitted = jit(f, backend="eager")
    pos, neg = torch.ones(3), -torch.ones(3)
    for x in (pos, pos, neg, neg, pos):
        assert torch.equal(jitted(x), f(x))
    report = jitted.explain()
    assert report.graph_count == 1 and report.breaks == () and report.captures == 2
    assert report.graphs[0].hits == 2  # the calls after the second capture ran the merged graph


def test_data_dependent_shape_arithmetic_stays_in_the_graph():
    def f(x):
        idx = torch.nonzero(x > 0)
        return idx.shape[0] * 1.0 + x.sum(), idx

    jitted = jit(f, backend="eager")
    for x in (torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.0, 3.0, 2.0]), torch.tensor([1.0, -1.0, 2.0])):
        a, b = f(x)
        c, d = jitted(x)
        assert torch.equal(a, c) and torch.equal(b, d)
    report = jitted.explain()
    assert report.graph_count == 1 and report.breaks == ()


def test_data_dependent_shape_read_by_python_is_rechecked():
    def f(x):
        idx = torch.nonzero(x > 0)
        return (x * 2 if idx.shape[0] > 1 else x - 1), idx

    jitted = jit(f, backend="eager")
    for x in (torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.0, 3.0, 2.0]), torch.tensor([1.0, -1.0, -2.0])):
        a, b = f(x)
        c, d = jitted(x)
        assert torch.equal(a, c) and torch.equal(b, d)
    # the decision is the comparison `idx.shape[0] > 1`, not the count: once both outcomes were
    # captured, one graph deciding inside serves all three (branches.py)
    report = jitted.explain()
    assert report.graph_count == 1 and report.captures == 2 and report.breaks == ()


def test_cache_limit_falls_back_for_good_when_nothing_hits():
    from jitlab.jit.frontend.cache import STARVED_MISSES

    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x * self.calls

    model = Counter()
    jitted = jit(model, backend="eager", max_entries=3)
    calls = 3 + STARVED_MISSES + 2
    for n in range(1, calls + 1):
        assert torch.equal(jitted(torch.ones(1)), torch.full((1,), float(n)))
    report = jitted.explain()
    assert report.captures == 3 and report.disabled and "cache limit" in report.disabled
    assert "self.calls == 0" in report.disabled  # the guard that kept failing, not only "guards failed"
    assert model.calls == calls


class _Ranked:
    def __init__(self, rank):
        self.rank = rank

    def __lt__(self, other):
        return self.rank < other.rank


def test_user_code_run_natively_is_not_cached():
    def f(x):
        ranked = sorted([_Ranked(2.0), _Ranked(1.0)])  # sort calls __lt__ natively: reads not guarded
        return x * ranked[0].rank

    jitted = jit(f, backend="eager")
    assert torch.equal(jitted(torch.ones(1)), f(torch.ones(1)))
    assert jitted.explain().disabled and "_Ranked.__lt__ ran natively" in jitted.explain().disabled


def test_callable_backend_receives_graph_and_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, [tuple(t.shape) for t in example_inputs]))
        return gm.forward

    model = Small()
    jitted = jit(model, backend=backend)
    x = torch.randn(2, 8)
    assert torch.equal(jitted(x), model(x))
    assert isinstance(seen[0][0], torch.fx.GraphModule)
    assert seen[0][1] == [(2, 8), (8, 8), (8,)]


def test_failing_backend_falls_back_to_the_graph():
    def broken(gm, example_inputs):
        raise RuntimeError("compiler exploded")

    model = Small()
    jitted = jit(model, backend=broken)
    x = torch.randn(2, 8)
    assert torch.equal(jitted(x), model(x))
    assert "compiler exploded" in jitted.explain().graphs[0].backend_note


def test_inductor_backend_with_batchnorm_train():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU())
    twin = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU())
    twin.load_state_dict(model.state_dict())
    jitted = jit(twin, backend="inductor")
    x = torch.randn(4, 8)
    for _ in range(3):
        expected = model(x)
        got = jitted(x)
        assert torch.allclose(expected, got, atol=1e-5)
        assert torch.allclose(model[1].running_var, twin[1].running_var, atol=1e-6)
    expected.sum().backward()
    got.sum().backward()
    assert torch.allclose(model[0].weight.grad, twin[0].weight.grad, atol=1e-5)
    report = jitted.explain()
    assert report.graph_count == 1 and report.graphs[0].backend_note is None


def test_data_dependent_float_and_mask_stay_in_one_graph():
    def scale_by_max(x):
        m = x.abs().max().item()
        return x / m, x[x > 0].sum()

    jitted = jit(scale_by_max, backend="eager")
    for seed in range(4):
        x = torch.randn(3, 5, generator=torch.Generator().manual_seed(seed))
        (a, b), (c, d) = scale_by_max(x), jitted(x)
        assert torch.equal(a, c) and torch.equal(b, d)
    report = jitted.explain()
    assert report.graph_count == 1 and report.breaks == ()
    assert report.graphs[0].hits == 3


def test_data_dependent_float_read_by_python_is_rechecked():
    def gate(x):
        v = x.mean().item()
        return x * 2 if v > 0 else x * v

    jitted = jit(gate, backend="eager")
    for x in (torch.ones(2), -torch.ones(2), torch.full((2,), -3.0), torch.ones(2)):
        assert torch.equal(jitted(x), gate(x))
    breaks = jitted.explain().breaks
    assert breaks and all("item" in b for b in breaks)


def test_a_jitted_bound_method_has_the_methods_signature():
    import inspect

    model = nn.Linear(3, 2)
    fast = jit(model.forward, backend="eager")
    # transformers' generate passes the keywords `inspect.signature(model.forward)` names: a jitted
    # forward set on the model must name the same ones (or the call differs from eager's)
    assert inspect.signature(fast) == inspect.signature(model.forward)
    assert torch.equal(fast(torch.ones(1, 3)), model(torch.ones(1, 3)))
