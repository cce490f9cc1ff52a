"""A graph whose operations all run without gradients (a model wrapping its forward in
`torch.no_grad()`) is compiled for inference, with the grad mode switched around the call; a graph
with any operation under gradients keeps the autograd path, and gradients equal eager's."""

from __future__ import annotations

import copy

import torch
import torch.nn as nn

from jitlab.jit import jit


class Served(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 3))

    def forward(self, x):
        with torch.no_grad():
            return self.net(x).softmax(-1)


def test_a_forward_under_no_grad_is_compiled_for_inference():
    torch.manual_seed(0)
    model = Served()
    jitted = jit(copy.deepcopy(model), backend="aot_eager")
    for n in range(3):
        x = torch.randn(4, 6, generator=torch.Generator().manual_seed(n))
        expected, got = model(x), jitted(x)
        assert torch.allclose(got, expected) and not got.requires_grad
        assert torch.is_grad_enabled()
    source = jitted.entries[0].source
    assert "(False)\n    try:\n        outs = GRAPH(" in source and "finally:" in source
    assert "_set_grad_enabled" not in jitted.entries[0].graph_code  # the switches left the graph


class PartlyNoGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)

    def forward(self, x):
        with torch.no_grad():
            scale = x.abs().mean()
        return self.fc(x) * scale


def test_a_graph_with_operations_under_gradients_keeps_them():
    torch.manual_seed(0)
    model = PartlyNoGrad()
    twin = copy.deepcopy(model)
    jitted = jit(twin, backend="aot_eager")
    for n in range(3):
        x = torch.randn(3, 5, generator=torch.Generator().manual_seed(n))
        model(x).sum().backward()
        jitted(x).sum().backward()
    assert "finally:" not in jitted.entries[0].source
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.allclose(p.grad, q.grad)


def test_the_eager_backend_runs_the_graph_with_its_own_switches():
    model = Served()
    jitted = jit(copy.deepcopy(model), backend="eager")
    x = torch.randn(2, 6)
    jitted(x)
    assert torch.allclose(jitted(x), model(x))
    assert "_set_grad_enabled" in jitted.entries[0].graph_code


def test_library_fast_paths_see_what_eager_code_sees():
    def probe(x):
        return torch.overrides.has_torch_function((x,)), x * 2

    jitted = jit(probe, backend="eager")
    x = torch.randn(3)
    assert probe(x)[0] is False
    assert jitted(x)[0] is False and jitted(x)[0] is False  # captured, then from the cache
    encoder = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True).eval()
    fast = jit(copy.deepcopy(encoder), backend="eager")
    with torch.no_grad():
        tokens = torch.randn(2, 5, 16)
        assert torch.allclose(fast(tokens), encoder(tokens), atol=1e-6)
    assert "_transformer_encoder_layer_fwd" in fast.entries[0].graph_code  # eager's fast path
