"""`nn.Parameter(t, requires_grad=False)` made in the forward (ParityBench's Positional_Encoding):
one graph, equal to eager call after call, while a parameter that leaves the call, or one that
requires grad, runs eagerly with its reason."""

from __future__ import annotations

import torch
import torch.nn as nn
from jit_helpers import assert_one_graph, check_program

from jitlab.jit import jit


def _inputs(n: int = 4) -> list[tuple[tuple, dict]]:
    return [((torch.randn(4, 8),), {}) for _ in range(n)]


class PositionalEncoding(nn.Module):
    """As Chinese_Text_Classification_Pytorch's: a plain tensor attribute wrapped on every call."""

    def __init__(self):
        super().__init__()
        self.pe = torch.randn(4, 8)
        self.dropout = nn.Dropout(0.0)

    def forward(self, x):
        return self.dropout(x + nn.Parameter(self.pe, requires_grad=False))


def test_positional_encoding_is_one_graph():
    jitted = check_program(PositionalEncoding, _inputs())
    assert_one_graph(jitted)


def test_the_parameter_follows_its_tensor_between_calls():
    model = PositionalEncoding()
    jitted = jit(model)
    x = torch.randn(4, 8)
    jitted(x)
    jitted(x)
    model.pe.mul_(3.0)  # in place: the same tensor, new values
    assert torch.equal(jitted(x), x + model.pe)
    model.pe = torch.ones(4, 8)  # another tensor
    assert torch.equal(jitted(x), x + 1.0)
    assert jitted.explain().fallbacks == ()


class SeesItsType(nn.Module):
    def __init__(self):
        super().__init__()
        self.pe = torch.randn(4, 8)

    def forward(self, x):
        p = nn.Parameter(data=self.pe, requires_grad=False)
        scale = 2.0 if isinstance(p, nn.Parameter) and not p.requires_grad else -1.0
        return x * p * scale


def test_the_capture_sees_a_parameter():
    jitted = check_program(SeesItsType, _inputs())
    assert_one_graph(jitted)  # and equal to eager's: a capture seeing a plain tensor would scale by -1


class WritesThroughIt(nn.Module):
    """The parameter shares its tensor's memory: an in-place change reaches the buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(4, 8))

    def forward(self, x):
        p = nn.Parameter(self.count, requires_grad=False)
        p.add_(1.0)
        return x + p


def test_in_place_writes_reach_the_tensor_wrapped():
    jitted = check_program(WritesThroughIt, _inputs(), observe=lambda m: m.count)
    assert_one_graph(jitted)


def test_a_tensor_that_requires_grad_is_detached_as_in_eager_code():
    def f(w, x):
        return (x * nn.Parameter(w * 2, requires_grad=False)).sum()

    jitted = jit(f)
    for _ in range(3):
        w = torch.randn(3, requires_grad=True)
        x = torch.randn(3, requires_grad=True)
        out = jitted(w, x)
        out.backward()
        assert w.grad is None
        assert torch.allclose(x.grad, w.detach() * 2)
    assert_one_graph(jitted)


class ReturnsIt(nn.Module):
    def __init__(self):
        super().__init__()
        self.pe = torch.randn(4, 8)

    def forward(self, x):
        return x + 1, nn.Parameter(self.pe, requires_grad=False)


class StoresIt(nn.Module):
    def __init__(self):
        super().__init__()
        self.pe = torch.randn(4, 8)

    def forward(self, x):
        self.frozen = nn.Parameter(self.pe * 2, requires_grad=False)
        return x + self.frozen


def test_a_parameter_returned_runs_eagerly_and_is_a_parameter():
    jitted = check_program(ReturnsIt, _inputs())
    for _ in range(2):
        _, p = jitted(torch.randn(4, 8))
        assert type(p) is nn.Parameter and not p.requires_grad
    assert any("nn.Parameter made in the call leaves it" in r for r in jitted.explain().fallbacks)


def test_a_parameter_stored_on_the_module_is_registered_as_in_eager_code():
    jitted = check_program(StoresIt, _inputs(), observe=lambda m: sorted(dict(m.named_parameters())))
    model = StoresIt()
    compiled = jit(model)
    for _ in range(3):
        compiled(torch.randn(4, 8))
        assert type(model.frozen) is nn.Parameter and "frozen" in dict(model.named_parameters())
    assert jitted.explain().fallbacks


def test_a_parameter_that_requires_grad_still_runs_eagerly_with_its_reason():
    class Trainable(nn.Module):
        def __init__(self):
            super().__init__()
            self.pe = torch.randn(4, 8)

        def forward(self, x):
            return x * nn.Parameter(self.pe)

    jitted = check_program(Trainable, _inputs())
    assert any("unknown origin" in r for r in jitted.explain().fallbacks)
    assert jitted(torch.randn(4, 8)).requires_grad


class LiveAcrossABreak(nn.Module):
    """The parameter is alive when Python reads tensor data: the code after the break, and the
    caller, must still see an nn.Parameter."""

    def __init__(self):
        super().__init__()
        self.pe = torch.randn(4, 8)

    def forward(self, x):
        p = nn.Parameter(self.pe, requires_grad=False)
        print("positive" if x.sum().item() > 0 else "negative")
        return x + 1, p


def test_a_parameter_alive_across_a_graph_break_stays_a_parameter():
    jitted = check_program(LiveAcrossABreak, _inputs(6))
    for _ in range(3):
        _, p = jitted(torch.randn(4, 8))
        assert type(p) is nn.Parameter
