"""jitlab.jit end to end on the constructs whose bytecode differs between Python 3.11, 3.12 and 3.13.

Each program runs eagerly and through the JIT (results, prints and state compared), and must be
*captured* on every supported Python: a silent fallback to eager would also give equal results, so
the explanation is checked too. `make test-jit-matrix` runs this file on 3.12 and 3.13.
"""

from __future__ import annotations

import torch
import torch.nn as nn
from jit_helpers import check_program


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


class Child(Base):
    """super().forward (LOAD_SUPER_ATTR), a comprehension over a ModuleList (inlined in 3.12+), list
    and tensor slices (BINARY_SLICE), `is not None` (POP_JUMP_IF_NOT_NONE), keyword-only arguments,
    f-string keys (FORMAT_VALUE / FORMAT_SIMPLE)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.scale = 0.5

    def forward(self, x, *, gate=None):
        h = super().forward(x)
        hs = [layer(h) for layer in self.layers]
        h = sum(hs[1:], hs[0]) * self.scale
        if gate is not None:
            h = h * gate
        return {f"out{i}": t[..., :2] for i, t in enumerate([h, -h])}


def _captured(jitted, graphs):
    report = jitted.explain()
    assert report.disabled is None and not report.fallbacks, str(report)
    assert len(report.graphs) == graphs, str(report)


def test_module_with_super_comprehensions_and_slices():
    torch.manual_seed(0)
    inputs = [((torch.randn(2, 4),), {}), ((torch.randn(2, 4),), {"gate": torch.ones(4)})]
    jitted = check_program(Child, inputs + inputs)
    _captured(jitted, graphs=2)  # with and without the gate
    assert sum(g.hits for g in jitted.explain().graphs) == 2


def _numbered(x):
    try:
        yield x * 2
        yield x * 3
    finally:
        print("generator closed")


def generator_dropped_early(x):
    for value in _numbered(x):
        return value + 1  # the generator is closed here: its `finally` prints


def generator_left_suspended_in_a_local(x):
    numbers = _numbered(x)
    first = next(numbers)
    return first + 1  # `numbers` is closed when the call returns: its `finally` prints


def comprehensions_walrus_and_calls(x, *, k=2):
    rows = [r for r in x.unbind(0) if (total := r.sum()) is not None]
    scaled = {i: r * k for i, r in enumerate(rows)}
    parts = [*scaled.values()]
    first, *rest = parts
    out = torch.stack([first, *rest]).sum(dim=0, keepdim=False)
    return out, total, torch.cat(parts[:1] + parts[1:], dim=0).shape


def slice_writes(x):
    out = x.clone()
    out[1:3] = 0.0
    out[::2] += 1.0
    tail = out[-2:]
    return out, tail.sum()


def test_generators_comprehensions_and_slices_are_captured():
    programs = [generator_dropped_early, generator_left_suspended_in_a_local, comprehensions_walrus_and_calls]
    for fn, graphs in [(fn, 1) for fn in programs] + [(slice_writes, 1)]:
        inputs = [((torch.ones(4, 3),), {}), ((torch.full((4, 3), 2.0),), {})]
        jitted = check_program(lambda fn=fn: fn, inputs)
        _captured(jitted, graphs)
