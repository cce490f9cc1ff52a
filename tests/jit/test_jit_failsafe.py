"""A failure of jitlab.jit's own machinery never becomes the user's crash, and the user's exceptions
still propagate unchanged (jitlab/jit/failsafe.py).

Faults of jitlab's are injected by replacing one of jitlab's own functions (the tracer's attribute
read, the graph compiler) for one test; the programs and torch run for real.
"""

import numpy as np
import pytest
import torch
from torch import nn

import jitlab
from jitlab.jit.frontend import api as api_module
from jitlab.jit.tracing import tracer as tracer_module


class NumpyScalars(nn.Module):
    """Code of the StyleGAN family (lama-cleaner): gains computed with numpy, used in torch calls."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))
        self.gain = 1 / np.sqrt(4)  # np.float64, a subclass of float

    def forward(self, x):
        w = self.weight.mul(np.float64(0.5)) * self.gain
        return torch.addmm(torch.full([4], np.float32(0.25)), x, w.t()) * np.sqrt(2)


def test_numpy_scalars_in_the_graph_are_one_graph_equal_to_eager():
    model = NumpyScalars()
    fast = jitlab.jit(model, backend="eager")
    for seed in range(3):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(seed))
        out, ref = fast(x), model(x)
        assert out.dtype == ref.dtype == torch.float32
        assert torch.allclose(out, ref)
    report = fast.explain()
    assert report.fallbacks == ()
    assert len(report.graphs) == 1 and report.graphs[0].graphs == 1 and report.graphs[0].hits == 2


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 3.0

    def forward(self, x):
        return torch.relu(x) * self.scale


def _break_attribute_reads(monkeypatch, name):
    """A bug in jitlab's tracer: reading attribute `name` fails inside jitlab's bookkeeping."""
    original = tracer_module.Tracer.load_attr

    def load_attr(self, obj, attr):
        if attr == name:
            raise AttributeError(f"injected bug in jitlab reading {attr!r}")
        return original(self, obj, attr)

    monkeypatch.setattr(tracer_module.Tracer, "load_attr", load_attr)


def test_a_bug_during_capture_falls_back_to_eager_with_its_reason(monkeypatch):
    _break_attribute_reads(monkeypatch, "scale")
    model = Scaled()
    fast = jitlab.jit(model, backend="eager")
    x = torch.randn(5)
    assert torch.equal(fast(x), torch.relu(x) * 3.0)  # the result comes from running eagerly
    report = fast.explain()
    assert report.disabled is not None
    assert "internal error in jitlab.jit during capture" in report.disabled
    assert "AttributeError: injected bug in jitlab reading 'scale'" in report.disabled
    assert torch.equal(fast(-x), torch.relu(-x) * 3.0)  # later calls run eagerly
    assert report.graphs == ()


def test_a_bug_in_a_cache_entry_falls_back_to_eager_with_its_reason(monkeypatch):
    def broken_compiler(gm, example_inputs, backend, *rest):
        def run(*args):
            raise NameError("name 'np' is not defined")  # what a graph with a numpy repr raised

        return run

    monkeypatch.setattr(api_module, "compile_graph", broken_compiler)
    model = Scaled()
    fast = jitlab.jit(model, backend="eager")
    x = torch.randn(5)
    assert torch.equal(fast(x), model(x))  # the capture computes the first call itself
    assert fast.explain().disabled is None
    assert torch.equal(fast(x + 1), model(x + 1))  # the entry raises: the call runs eagerly
    reason = fast.explain().disabled
    assert reason is not None and "running a cache entry" in reason
    assert "NameError: name 'np' is not defined" in reason


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x) * 2


def test_a_bug_after_a_graph_drew_random_numbers_is_not_run_again(monkeypatch):
    """The graph drew random numbers before the entry failed: an eager rerun would draw others, so
    the call's result would not be the one eager code gives under the same seed (before, it was run
    again and returned another dropout mask). The exception propagates with jitlab's note."""

    def failing_after_the_graph(gm, example_inputs, backend, *rest):
        def run(*args):
            gm(*args)  # the dropout draws its mask
            raise NameError("name 'np' is not defined")

        return run

    monkeypatch.setattr(api_module, "compile_graph", failing_after_the_graph)
    model = Noisy()
    fast = jitlab.jit(model, backend="eager")
    torch.manual_seed(0)
    fast(torch.ones(8))  # the capture
    torch.manual_seed(1)
    with pytest.raises(NameError):
        fast(torch.ones(8))
    assert fast.explain().disabled is None


class Checked(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 3)

    def forward(self, ids):
        if ids.shape[0] > 4:
            raise ValueError("at most 4 rows")
        return self.embed(ids).sum(0)


def test_the_users_exception_during_capture_propagates_and_the_jit_stays_on():
    model = Checked()
    fast = jitlab.jit(model, backend="eager")
    with pytest.raises(ValueError, match="at most 4 rows") as caught:
        fast(torch.zeros(5, dtype=torch.long))
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert fast.explain().disabled is None
    ids = torch.tensor([1, 2, 3])
    assert torch.equal(fast(ids), model(ids))
    assert torch.equal(fast(ids + 1), model(ids + 1))
    report = fast.explain()
    assert report.disabled is None and len(report.graphs) == 1 and report.graphs[0].hits == 1


def test_the_users_exception_raised_by_a_graph_propagates_and_the_entry_stays():
    model = Checked()
    fast = jitlab.jit(model, backend="eager")
    ids = torch.tensor([1, 2, 3])
    assert torch.equal(fast(ids), model(ids))
    bad = torch.tensor([1, 2, 30])  # out of the embedding's range: eager raises IndexError
    with pytest.raises(IndexError) as eager:
        model(bad)
    with pytest.raises(IndexError) as jitted:
        fast(bad)
    assert str(jitted.value) == str(eager.value)
    assert jitted.value.__context__ is None
    assert fast.explain().disabled is None
    assert torch.equal(fast(ids + 1), model(ids + 1))
    report = fast.explain()
    # the failed call went through the entry (no new capture); a hit counts once its graph returned
    assert report.captures == 1 and report.graphs[0].hits == 1


LOG = []


class Logs(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0

    def forward(self, x):
        LOG.append(x.shape[0])
        print("forward ran")
        if x.shape[0] > 4:
            raise ValueError("too long")
        return x * self.scale


def test_no_second_run_after_effects_when_jitlab_fails(monkeypatch, capsys):
    _break_attribute_reads(monkeypatch, "scale")
    LOG.clear()
    fast = jitlab.jit(Logs(), backend="eager")
    with pytest.raises(AttributeError, match="injected bug") as caught:
        fast(torch.ones(2))
    assert LOG == [2]  # the append happened once: running the call again would repeat it
    assert capsys.readouterr().out == "forward ran\n"
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "raised in code run by jitlab.jit" in notes


def test_the_users_exception_after_effects_propagates_once(capsys):
    LOG.clear()
    model = Logs()
    fast = jitlab.jit(model, backend="eager")
    with pytest.raises(ValueError, match="too long") as caught:
        fast(torch.ones(6))
    assert LOG == [6]
    assert capsys.readouterr().out == "forward ran\n"
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "bug in jitlab.jit" not in notes  # raised by the program's own raise statement
    assert 'raise ValueError("too long")' in notes
    assert fast.explain().disabled is None


class BuildsModulesInForward(nn.Module):
    """Llama's `self.layers[: config.num_hidden_layers]` (a slice of a ModuleList is a new ModuleList)
    and DeepKE's `nn.Softmax(dim=-1)(scores)`: modules built during the call."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers[:2]:
            x = layer(x)
        return nn.Softmax(dim=-1)(x)


def test_modules_built_during_the_call_after_torch_compile_ran():
    # torch.compile replaces nn.Module.__init__ for good in this process (Dynamo's generation tagging):
    # jitlab.jit then saw a module whose __init__ had not run yet and read its hooks (AttributeError:
    # 'ModuleList' object has no attribute '_forward_hooks', the crash of Llama, Mistral and Qwen2)
    torch.compile(nn.Linear(2, 2), backend="eager")(torch.randn(1, 2))
    assert nn.Module.__init__.__module__ != "torch.nn.modules.module"
    model = BuildsModulesInForward()
    fast = jitlab.jit(model, backend="eager")
    for seed in range(3):
        x = torch.randn(2, 4, generator=torch.Generator().manual_seed(seed))
        assert torch.allclose(fast(x), model(x))
    report = fast.explain()
    assert report.fallbacks == ()
    assert len(report.graphs) == 1 and report.graphs[0].graphs == 1 and report.graphs[0].hits == 2


SEEN: list[int] = []


def _nested(n, x, then_raise):
    if n == 0:
        SEEN.append(1)  # an effect made where jitlab.jit runs the code natively (nested too deep)
        if then_raise:
            raise ValueError("at the bottom")
        return x
    return _nested(n - 1, x, then_raise)


def raises_inside_native_code(x):
    return _nested(70, x + 1, True)


def raises_after_native_code(x):
    y = _nested(70, x + 1, False)
    raise KeyError(f"after {y.sum().item():g}")


@pytest.mark.parametrize(
    "program, error", [(raises_inside_native_code, ValueError), (raises_after_native_code, KeyError)]
)
def test_an_exception_after_native_code_ran_is_not_run_again(program, error):
    """Code run natively (a call at a graph break, a user function nested too deep to interpret) may
    have changed anything: a call that raises after it must not be run a second time to let eager
    execution raise, or its effects happen twice (they did: SEEN held [1, 1])."""
    jitted = jitlab.jit(program, backend="eager")
    for _ in range(2):
        SEEN.clear()
        with pytest.raises(error) as eager_error:
            program(torch.ones(2))
        assert SEEN == [1]
        SEEN.clear()
        with pytest.raises(error) as jit_error:
            jitted(torch.ones(2))
        assert SEEN == [1]
        assert str(jit_error.value) == str(eager_error.value)


class LegacyScriptModule(torch.jit.ScriptModule):
    """RWKV's `MyModule = torch.jit.ScriptModule` with a Python forward: its attributes live in the
    script module it wraps, and its `__dict__` has no `_parameters`, `_buffers` or `_modules`."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.full((3,), 2.0))
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x) * self.scale


def test_a_script_module_with_a_python_forward_falls_back_with_a_reason_not_a_bug():
    torch.manual_seed(0)
    model = LegacyScriptModule()
    jitted = jitlab.jit(model, backend="eager")
    x = torch.randn(2, 3)
    for _ in range(2):
        assert torch.equal(jitted(x), model(x))
    reasons = " ".join(str(reason) for reason in jitted.explain().fallback_reasons)
    assert "internal error" not in reasons and "unknown origin" in reasons  # the scripted submodule's output


class CountsRows(nn.Module):
    """Arithmetic on a number read from the data (`.item()`), after an outside write: a call that
    cannot be run again, so a bug of jitlab's in between must not reach the caller."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append(x.shape[0])  # an outside effect before the arithmetic
        n = x.sum().item()
        return x * (n * 2 + 1)


def test_a_bug_recording_arithmetic_on_data_after_an_effect_costs_the_capture_not_the_call(monkeypatch):
    """Seen on torch 2.11, whose `reversed(graph.nodes)` is not an iterator: recording arithmetic on
    a number read from the data raised TypeError inside jitlab after the call had written to outside
    state, and `generate` crashed where eager ran. Recording arithmetic is bookkeeping: its failure
    must cost the capture (the call finishes with the real values) and never raise."""
    from jitlab.jit.tracing.break_recorder import BreakRecorder

    def broken(self, fn, args, result):
        raise TypeError("'_node_list' object is not an iterator")  # torch 2.11's error, injected

    monkeypatch.setattr(BreakRecorder, "lazy_arithmetic", broken)
    model, reference = CountsRows(), CountsRows()
    fast = jitlab.jit(model, backend="eager")
    for rows in (3, 3, 5):
        x = torch.arange(float(rows))
        assert torch.equal(fast(x), reference(x))
    assert model.seen == reference.seen == [3, 3, 5]
    text = str(fast.explain())
    assert "internal-error" in text and "'_node_list' object is not an iterator" in text


def test_no_next_on_a_reversed_node_list():
    """torch 2.11's `reversed(graph.nodes)` is a `_node_list`, not an iterator (torch 2.13's is): a
    `next(reversed(...))` of it raised TypeError in every capture on a GPU machine's torch 2.11."""
    import re
    from pathlib import Path

    jit_dir = Path(jitlab.__file__).parent / "jit"
    found = [
        f"{path.relative_to(jit_dir)}:{number}"
        for path in sorted(jit_dir.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"next\(\s*reversed\(", line)
    ]
    assert found == []
