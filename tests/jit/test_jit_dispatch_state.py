"""State that acts below the operations jitlab.jit records, changed inside the jitted call:
`torch.autocast` (`linear` is recorded on float32 tensors and runs in bfloat16) and the flags that pick
kernels (`sdpa_kernel`, `torch.backends.mkldnn.flags`). A graph replayed its operations under the
state of the call's start: in float32, and its results differed from eager's from the first cache
hit on (5.8e-4 on a loss; the parameters after a training step); with other kernels (1.3e-6 and
7.2e-7 apart). Such a call runs eagerly, with the reason and the line in explain(), and every result
is eager's, call after call (graph/dispatch_state.py)."""

from __future__ import annotations

import copy

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


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_autocast_inside_the_call_runs_eagerly_and_equals_eager(backend, train):
    torch.manual_seed(0)
    models = [Mlp()]
    models.append(copy.deepcopy(models[0]))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in models]
    eager = _make_step(models[0], opts[0], train)
    jitted = jit(_make_step(models[1], opts[1], train), backend=backend)
    for i in range(6):
        g = torch.Generator().manual_seed(i)
        n = 3 + i % 3
        x, y = torch.randn(n, 6, generator=g), torch.randn(n, 3, generator=g)
        assert torch.equal(eager(x, y), jitted(x, y)), f"call {i}"
        for p, q in zip(models[0].parameters(), models[1].parameters(), strict=True):
            assert torch.equal(p, q), f"call {i}"
    report = jitted.explain()
    assert report.fallbacks and not report.graphs
    [reason] = [r for r in report.reasons if "autocast" in r.message]
    assert reason.kind is ReasonKind.GLOBAL_STATE
    assert reason.where is not None and "linear.py:" in reason.where  # the operation's line: Linear's


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
