"""torch.Generator objects in the jitted call. A graph keeps the generator an operation draws from as
the object itself. Made in the call, that was the capture's: a hit drew on from where the capture
left it, where eager code makes a new one and draws the same numbers again; reseeded in the call
(`g.manual_seed(5)`, `g.set_state(s)`), the graph did not repeat the reseeding. Both gave other
numbers than eager code's on every hit. Such calls run eagerly, with the reason in explain(); a call
that draws from an outside generator without changing it stays one graph, and its hits draw what
eager code draws."""

from __future__ import annotations

import pytest
import torch

from jitlab.jit import jit
from jitlab.jit.reasons import ReasonKind

OUTSIDE = torch.Generator()


def _made_and_seeded(x: torch.Tensor) -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    return x + torch.randn(3, generator=g)


def _made_unseeded(x: torch.Tensor) -> torch.Tensor:
    g = torch.Generator()  # a new generator starts from torch's default seed every time
    return x + torch.rand(3, generator=g)


def _outside_reseeded(x: torch.Tensor) -> torch.Tensor:
    OUTSIDE.manual_seed(5)
    return x + torch.randn(3, generator=OUTSIDE)


def _outside_state_restored(x: torch.Tensor) -> torch.Tensor:
    state = OUTSIDE.get_state()
    y = x + torch.rand(3, generator=OUTSIDE)
    OUTSIDE.set_state(state)
    return y + torch.rand(3, generator=OUTSIDE)


def _outside_drawn(x: torch.Tensor) -> torch.Tensor:
    return x + torch.randn(3, generator=OUTSIDE)


def _calls(fn, backend: str) -> tuple[list[torch.Tensor], list[torch.Tensor], object]:
    """Four calls eagerly and four through jit, each series from the same outside generator state."""
    OUTSIDE.manual_seed(1)
    eager = [fn(torch.full((3,), float(i))) for i in range(4)]
    OUTSIDE.manual_seed(1)
    jitted = jit(fn, backend=backend)
    got = [jitted(torch.full((3,), float(i))) for i in range(4)]
    return eager, got, jitted.explain()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (_made_and_seeded, "torch.Generator() made inside the call"),
        (_made_unseeded, "torch.Generator() made inside the call"),
        (_outside_reseeded, "torch.Generator.manual_seed changes a random generator"),
        (_outside_state_restored, "torch.Generator.set_state changes a random generator"),
    ],
    ids=["made-seeded", "made", "reseeded", "state-restored"],
)
def test_a_generator_made_or_changed_in_the_call_runs_eagerly(fn, message, backend):
    eager, got, report = _calls(fn, backend)
    for i, (a, b) in enumerate(zip(eager, got, strict=True)):
        assert torch.equal(a, b), f"call {i}: {a} vs {b}"
    assert report.fallbacks and not report.graphs
    [reason] = [r for r in report.reasons if message in r.message]
    assert reason.kind is ReasonKind.UNSUPPORTED_CODE


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_drawing_from_an_outside_generator_stays_a_graph(backend):
    eager, got, report = _calls(_outside_drawn, backend)
    assert len({tuple(t.tolist()) for t in eager}) == 4  # each call draws new numbers
    for i, (a, b) in enumerate(zip(eager, got, strict=True)):
        assert torch.equal(a, b), f"call {i}: {a} vs {b}"
    assert not report.fallbacks
    assert report.captures == 1 and report.graphs[0].hits == 3
