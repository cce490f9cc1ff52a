"""State that acts below the operations jitlab.jit records, changed inside the jitted call:
`torch.autocast` (`linear` is recorded on float32 tensors and runs in bfloat16) and the flags that pick
kernels (`sdpa_kernel`, `torch.backends.mkldnn.flags`). A graph replaying its operations under the
state of the call's start computed in float32, and its results differed from eager's from the first
cache hit on (5.8e-4 on a loss); with other kernels (1.3e-6 and 7.2e-7 apart).

`with torch.autocast(...)` regions are recorded as graph nodes (graph/autocast_nodes.py): the call is
captured, a compiler traces the casts autocast makes, and every result is eager's, call after call,
with autocast off again after each. What would leave a region open across a cut (a graph break inside
it, a backward pass inside it with a compiling backend) runs eagerly or uncompiled, with the reason.
Kernel flags changed inside the call still run it eagerly."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
import torch.nn as nn
from training_step_helpers import Mlp

from jitlab.jit import jit
from jitlab.jit.reasons import ReasonKind


def _make_step(model: nn.Module, opt: torch.optim.Optimizer, train: bool):
    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
        loss = nn.functional.mse_loss(out.float(), y)
        if train:
            loss.backward()
            opt.step()
            opt.zero_grad()
        return loss

    return step


def _assert_close(expected: torch.Tensor, got: torch.Tensor, backend: str, what: str) -> None:
    assert expected.dtype == got.dtype, what
    if backend == "eager":  # the recorded operations themselves, under the same autocast regions
        assert torch.equal(expected, got), what
    else:  # AOTAutograd's decompositions round the optimizer's update differently
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6, msg=what)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_autocast_inside_the_call_is_captured_and_equals_eager(backend, train):
    torch.manual_seed(0)
    models = [Mlp()]
    models.append(copy.deepcopy(models[0]))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in models]
    eager = _make_step(models[0], opts[0], train)
    jitted = jit(_make_step(models[1], opts[1], train), backend=backend)
    for i in range(8):
        g = torch.Generator().manual_seed(i)
        n = 3 + i % 4
        x, y = torch.randn(n, 6, generator=g), torch.randn(n, 3, generator=g)
        _assert_close(eager(x, y), jitted(x, y), backend, f"call {i}")
        assert not torch.is_autocast_enabled("cpu"), f"call {i}: autocast left on"
        for p, q in zip(models[0].parameters(), models[1].parameters(), strict=True):
            _assert_close(p, q, backend, f"call {i}")
    report = jitted.explain()
    assert not report.fallbacks and not report.breaks
    assert report.captures <= 2 and sum(e.hits for e in report.graphs) == 8 - report.captures
    assert not any(e.backend_note for e in report.graphs)
    assert (
        "enter_autocast" in jitted.entries[0].graph_code and "exit_autocast" in jitted.entries[0].graph_code
    )


def test_the_graph_computes_in_the_dtype_autocast_chooses():
    """Without the region the graph would compute in float32: its result would differ from eager's,
    which is bfloat16 rounded."""
    lin = nn.Linear(16, 16)

    def fn(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = lin(x)
            with torch.autocast("cpu", enabled=False):  # nested: float32 again inside
                g = h.float() @ h.float().T
            k = g @ g
        return h, k

    for backend in ("eager", "aot_eager"):
        jitted = jit(fn, backend=backend)
        for i in range(4):
            x = torch.randn(4, 16, generator=torch.Generator().manual_seed(i))
            (h, k), (jh, jk) = fn(x), jitted(x)
            assert h.dtype == jh.dtype == torch.bfloat16 and k.dtype == jk.dtype == torch.bfloat16
            assert torch.equal(h, jh) and torch.equal(k, jk), (backend, i)
            assert not torch.is_autocast_enabled("cpu")
        assert not jitted.explain().fallbacks, backend


class _Raising(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = self.lin(x)
            return h[idx]  # an index out of range raises inside the region, in the graph


def test_a_graph_raising_inside_a_region_leaves_autocast_off():
    model = _Raising()
    jitted = jit(model, backend="eager")
    x = torch.randn(4, 6)
    for k in (1, 2):
        assert torch.equal(jitted(x, torch.tensor(k)), model(x, torch.tensor(k)))
    assert jitted.explain().graphs[0].hits >= 1
    with pytest.raises(IndexError):
        jitted(x, torch.tensor(9))
    assert not torch.is_autocast_enabled("cpu")
    assert torch.equal(jitted(x, torch.tensor(3)), model(x, torch.tensor(3)))
    assert jitted(x, torch.tensor(3)).dtype == torch.bfloat16


def _class_pattern(t: torch.Tensor) -> torch.Tensor:
    match t:
        case torch.Tensor():  # MATCH_CLASS, which the interpreter does not run: a graph break
            factor = 2.0
    return t * factor


_LIN = nn.Linear(6, 6)
_OUTSIDE = torch.autocast("cpu", dtype=torch.bfloat16)


def _break_inside(x: torch.Tensor) -> torch.Tensor:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = _class_pattern(_LIN(x))
        return h @ h.T


def _backward_inside(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.detach().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = _LIN(x).float().sum()
        y.backward()
    return y.detach(), x.grad


_PICKLED = pickle.dumps(torch.autocast("cpu", dtype=torch.bfloat16))


def _context_of_unknown_origin(x: torch.Tensor) -> torch.Tensor:
    with pickle.loads(_PICKLED):  # made by native code: neither made by the program nor read from outside
        return _LIN(x)


@pytest.mark.parametrize(
    ("fn", "eager_for_good", "why"),
    [
        (_break_inside, True, "a graph break at "),
        (_backward_inside, False, "a host operation (backward) inside `with torch.autocast(...)`"),
        (_context_of_unknown_origin, True, "a torch.autocast of unknown origin"),
    ],
    ids=["break-inside", "backward-inside", "unknown-origin"],
)
def test_what_would_cut_a_region_runs_eagerly_with_its_reason(fn, eager_for_good, why):
    jitted = jit(fn, backend="aot_eager")
    for i in range(4):
        x = torch.randn(3 + i % 2, 6, generator=torch.Generator().manual_seed(i))
        expected, got = fn(x), jitted(x)
        for a, b in zip(
            expected if isinstance(expected, tuple) else (expected,),
            got if isinstance(got, tuple) else (got,),
        ):
            assert torch.equal(a, b), i
        assert not torch.is_autocast_enabled("cpu")
    report = jitted.explain()
    if eager_for_good:
        assert report.fallbacks and not report.graphs
        assert any(why in r.message for r in report.reasons)
        assert all(r.kind is ReasonKind.GLOBAL_STATE for r in report.reasons if why in r.message)
    else:  # the graph runs uncompiled, served from the cache
        assert not report.fallbacks and sum(e.hits for e in report.graphs) >= 2
        assert all(why in (e.backend_note or "") for e in report.graphs)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_model_called_inside_autocast_is_captured_under_that_state(backend):
    """`with torch.autocast(...): out = jitted(x)`, the backward pass and the optimizer outside, as
    people train with mixed precision: the entry is guarded by autocast's whole state at the call's
    start, its graph is traced under it, and a call with autocast off takes another entry."""
    torch.manual_seed(0)
    models = [nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))]
    models.append(copy.deepcopy(models[0]))
    opts = [torch.optim.AdamW(m.parameters(), lr=1e-2) for m in models]
    jitted = jit(models[1], backend=backend)
    for i in range(8):
        g = torch.Generator().manual_seed(i)
        n = 3 + i % 3
        x, y = torch.randn(n, 6, generator=g), torch.randn(n, 3, generator=g)
        amp = i % 4 != 3
        outs = []
        for model, opt in ((models[0], opts[0]), (jitted, opts[1])):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                out = model(x)
                loss = nn.functional.mse_loss(out.float(), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            outs.append(out)
        assert outs[0].dtype == outs[1].dtype == (torch.bfloat16 if amp else torch.float32), i
        assert torch.equal(outs[0], outs[1]), i
        for p, q in zip(models[0].parameters(), models[1].parameters(), strict=True):
            assert torch.equal(p, q), i
    report = jitted.explain()
    assert not report.fallbacks and report.captures <= 3
    assert sum(e.hits for e in report.graphs) == 8 - report.captures
    guards = [g for e in report.graphs for g in e.guards if "autocast" in g]
    assert "GLOBAL_STATE: autocast is on as now (cpu bfloat16)" in guards
    assert "GLOBAL_STATE: autocast is off" in guards


def test_autocast_disabled_inside_the_call_is_still_captured():
    """`torch.autocast(..., enabled=False)` with autocast already off (transformers' rotary
    embeddings) changes nothing: the call is one graph, and its hits equal eager."""

    def fn(x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", enabled=False):
            y = x @ x.T
        return y.softmax(-1)

    jitted = jit(fn, backend="eager")
    for i in range(4):
        x = torch.randn(5, 5, generator=torch.Generator().manual_seed(i))
        assert torch.equal(jitted(x), fn(x))
    report = jitted.explain()
    assert not report.fallbacks
    assert report.captures == 1 and report.graphs[0].hits == 3


_CONV = nn.Conv2d(3, 4, 3)


def _math_attention(q: torch.Tensor) -> torch.Tensor:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        return nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)


def _convolution_without_mkldnn(x: torch.Tensor) -> torch.Tensor:
    with torch.backends.mkldnn.flags(enabled=False):
        return _CONV(x)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize(
    ("fn", "shape", "flag"),
    [
        (_math_attention, (2, 4, 64, 32), "flash_sdp_enabled"),
        (_convolution_without_mkldnn, (2, 3, 16, 16), "mkldnn_enabled"),
    ],
    ids=["sdpa_kernel", "mkldnn-flags"],
)
def test_kernel_flags_changed_inside_the_call_run_eagerly(fn, shape, flag, backend):
    jitted = jit(fn, backend=backend)
    for i in range(4):
        x = torch.randn(shape, generator=torch.Generator().manual_seed(i))
        assert torch.equal(fn(x), jitted(x)), f"call {i}"
    report = jitted.explain()
    assert report.fallbacks and not report.graphs
    [reason] = [r for r in report.reasons if "kernel flags" in r.message]
    assert flag in reason.message and reason.kind is ReasonKind.GLOBAL_STATE


def _decides_after_a_region(x: torch.Tensor, w: torch.Tensor, buf: torch.Tensor) -> torch.Tensor:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w  # 1.003 in float32, 1.0 in bfloat16
    buf.add_(1)  # the graph changes an input: its decision is checked before it runs (check_prefix.py)
    if y.float().sum() > 1.001:
        return y * 2
    return y * 3


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_decision_checked_before_the_graph_is_computed_under_the_region(backend):
    """The check prefix recomputes the value Python decided on before the graph runs. Without the
    region it computed in float32 (1.003 > 1.001) where eager code computed in bfloat16 (1.0), so
    the entry captured on 2.0 served 1.003 with the other branch's result."""
    jitted = jit(_decides_after_a_region, backend=backend)
    expected_buf, buf = torch.zeros(2), torch.zeros(2)
    for i, v in enumerate([2.0, 2.5, 1.003, 0.7, 1.003, 2.0]):
        x, w = torch.full((1, 1), v), torch.ones(1, 1)
        expected, got = _decides_after_a_region(x, w, expected_buf), jitted(x, w, buf)
        assert torch.equal(expected, got), (i, v, expected, got)
        assert torch.equal(expected_buf, buf)
        assert not torch.is_autocast_enabled("cpu")
    report = jitted.explain()
    assert not report.fallbacks and report.captures == 2


def _outside_context(x: torch.Tensor) -> torch.Tensor:
    with _OUTSIDE:
        return _LIN(x) * 2


@torch.autocast("cpu", dtype=torch.bfloat16)
def _decorated(x: torch.Tensor) -> torch.Tensor:
    return _LIN(x) @ _LIN(x).T


def _calls_decorated(x: torch.Tensor) -> torch.Tensor:
    return _decorated(x).float() + 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_contexts_made_outside_the_call_are_guarded_by_what_they_switch(backend):
    """A global `torch.autocast` and the one `@torch.autocast(...)` keeps for the function it decorates
    (whose wrapper is interpreted): the region is a graph node, and its device, dtype and switches are
    guarded, so rebinding the global to a context that is off takes another entry."""
    global _OUTSIDE
    saved = _OUTSIDE
    try:
        for fn in (_outside_context, _calls_decorated):
            jitted = jit(fn, backend=backend)
            for i in range(6):
                if fn is _outside_context and i == 4:
                    _OUTSIDE = torch.autocast("cpu", dtype=torch.bfloat16, enabled=False)
                x = torch.randn(3 + i % 2, 6, generator=torch.Generator().manual_seed(i))
                expected, got = fn(x), jitted(x)
                assert expected.dtype == got.dtype and torch.equal(expected, got), (fn.__name__, i)
                assert not torch.is_autocast_enabled("cpu")
            report = jitted.explain()
            assert not report.fallbacks, (fn.__name__, report.fallbacks)
            assert sum(e.hits for e in report.graphs) >= 3, fn.__name__
        assert _outside_context(torch.randn(2, 6)).dtype == torch.float32  # the rebound context is off
    finally:
        _OUTSIDE = saved
