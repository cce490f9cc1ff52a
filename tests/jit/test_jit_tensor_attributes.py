"""Attributes the program sets on outside tensors (`weight.scale = 2.0`, kept in the tensor's own
`__dict__`): read in the call, they are guarded as an object's attributes are.

Before, every attribute of a tensor counted as the graph's (its shape, dtype, grad), so a changed
`weight.scale` between calls returned the old result."""

from __future__ import annotations

import torch
import torch.nn as nn

from jitlab.jit import jit


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(3))
        self.weight.scale = 2.0  # a library's quantisation scale, say

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight * self.weight.scale


def test_an_attribute_set_on_a_parameter_is_guarded() -> None:
    model = Scaled()
    jitted = jit(model, backend="eager")
    x = torch.randn(2, 3)
    with torch.no_grad():
        for step in range(5):
            if step == 2:
                model.weight.scale = 5.0
            assert torch.equal(jitted(x), model(x)), step
    report = jitted.explain()
    assert report.captures == 2
    assert sum(g.hits for g in report.graphs) == 3


SHIFT = torch.zeros(3)
SHIFT.amount = 1.0


def shifted(x: torch.Tensor) -> torch.Tensor:
    return x + SHIFT + SHIFT.amount


def test_an_attribute_set_on_a_global_tensor_is_guarded() -> None:
    jitted = jit(shifted, backend="eager")
    x = torch.randn(3)
    for step in range(4):
        if step == 2:
            SHIFT.amount = -3.0
        assert torch.equal(jitted(x), shifted(x)), step
    assert jitted.explain().captures == 2
