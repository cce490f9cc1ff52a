"""A size decision whose value is a plain Python int or bool on the run on fake tensors (a static
size of a tensor whose other sizes are symbolic, compared with 0) keeps those sizes symbolic.

torch before 2.13 keeps only tensors and symbolic numbers as a node's value in FakeTensorProp: a
plain bool read None there, so every such fact seemed to differ from the capture and sizes stayed
static. GPT-2's `generate` then took a capture per cache length (8 captures and the cache limit,
with torch 2.11 on the GPU machine) where torch 2.13 took 4. The second variant makes torch 2.13's
FakeTensorProp drop those values as torch 2.11's does, so the test covers both behaviours here."""

from __future__ import annotations

import pytest
import torch
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from jitlab.jit import jit

BATCHES = [2, 3, 5, 4, 7, 6, 9, 8, 11, 10]


def empty_heads_special(x: torch.Tensor, table: dict[str, int]) -> torch.Tensor:
    y = x.reshape(x.shape[0], 4, -1)  # the batch symbolic after one miss, the 4 heads static
    if y.size(1) == 0:  # a static size of a tensor with symbolic sizes: a plain int on fakes
        return y.sum()  # (GPT-2's cache checks `keys.size(2) == 0` this way)
    return (y * table["scale"]).sum(-1) + len(table)


def _as_torch_2_11(value):
    """A node's value as torch 2.11's FakeTensorProp keeps it: plain numbers None, in tuples too."""
    if isinstance(value, (tuple, list)):
        return tuple(_as_torch_2_11(v) for v in value)
    return None if type(value) in (bool, int, float) else value


@pytest.fixture(params=["this torch", "torch before 2.13"])
def fake_values(request, monkeypatch):
    """Run with FakeTensorProp as installed, and as torch before 2.13 (plain values dropped)."""
    if request.param == "torch before 2.13":
        original = FakeTensorProp.run_node

        def run_node(self, n):
            out = original(self, n)
            n.meta["val"] = _as_torch_2_11(n.meta.get("val"))
            return out

        monkeypatch.setattr(FakeTensorProp, "run_node", run_node)
    return request.param


def test_a_static_size_read_from_a_symbolic_tensor_keeps_the_batch_symbolic(fake_values):
    fast = jit(empty_heads_special, backend="eager")
    for batch in BATCHES:
        x = torch.randn(batch, 4, 6)
        table = {"scale": 3}
        assert torch.equal(fast(x, table), empty_heads_special(x, dict(table))), batch
    report = fast.explain()
    assert report.captures == 2, str(report)
    assert report.graphs[1].hits == len(BATCHES) - 2
    assert "static sizes" not in str(report)
