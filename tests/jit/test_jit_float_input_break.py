"""A float read from outside the call (a global's attribute) that changed between calls is a graph
input; with a graph break beside it and sizes that became symbolic, planning the entry's pieces
needs its fake value too (it raised KeyError, and the entry was dropped: `jitlab fuzz --seed 44`,
program 19)."""

import dataclasses

import torch
from torch import nn

import jitlab


@dataclasses.dataclass
class Opts:
    scale: float = 0.5


OPTS = Opts()


@torch.compiler.disable
def opaque(t):
    return t * 2


class Model(nn.Module):
    def forward(self, x):
        h = x * OPTS.scale
        h = opaque(h)  # a call break
        return h - 1.0


def test_a_changing_global_float_beside_a_break_keeps_its_entries():
    model = Model()
    jitted = jitlab.jit(model, backend="eager")
    calls = [(0.5, torch.float32, 6), (1.5, torch.float32, 6), (0.2, torch.float32, 6), (0.7, torch.float64, 2),
             (0.9, torch.float64, 3), (1.1, torch.float32, 5), (1.3, torch.float64, 4)]  # fmt: skip
    for n, (scale, dtype, rows) in enumerate(calls):
        OPTS.scale = scale
        x = torch.randn(rows, 4, dtype=dtype, generator=torch.Generator().manual_seed(n))
        assert torch.equal(jitted(x), model(x))
    explained = jitted.explain()
    assert not explained.fallbacks and not explained.eager_misses, explained
    assert explained.captures <= 4 and sum(g.hits for g in explained.graphs) >= 2, explained
