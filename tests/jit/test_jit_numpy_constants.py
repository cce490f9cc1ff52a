"""NumPy arrays made inside a jitted call and turned into tensors.

`torch.as_tensor(a)` of an array made in the call was recorded with the array object itself as a
constant of the graph, and the tensor it made shares that array's memory. Every call then started
from the same array: an in-place write to the tensor (`iden.mul_(2)` in the call, or by the caller
on a returned tensor) changed the constant, and the next call returned a wrong result (`g`, `g2`,
`g3` below failed on the old code from their second call). A write to the array after the graph
read it (`a.fill(5)`) reached the graph's earlier use too. The graph now keeps a copy of the array as
it was when read, and hands out a copy of it on every call.

`torch.from_numpy(a)` is no torch function a TorchFunctionMode sees: its tensor was "of unknown
origin" and the call ran eagerly for good (PointNet's `torch.from_numpy(np.eye(k)...)`). It is now
recorded as `torch.as_tensor(a)`, which makes the same tensor.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from jitlab.jit import jit

W = np.ones(3, dtype=np.float32)


def scaled_identity(x):
    iden = torch.as_tensor(np.eye(3).flatten().astype(np.float32))
    iden.mul_(2)
    return x + iden


def shared_then_written(x):
    a = np.ones(3, dtype=np.float32)
    t = torch.as_tensor(a)
    t += 1
    return x * t


def returns_the_tensor(x):
    return torch.as_tensor(np.ones(x.shape[0], dtype=np.float32))


def array_written_after_read(x):
    a = np.zeros(3, dtype=np.float32)
    first = torch.as_tensor(a).clone()
    a.fill(5.0)
    second = torch.as_tensor(a)
    return x + first + second * 10


def pointnet_identity(x):
    batch = x.shape[0]
    iden = (
        torch.from_numpy(np.array([1, 0, 0, 0, 1, 0, 0, 0, 1]).astype(np.float32)).view(1, 9).repeat(batch, 1)
    )
    return (x + iden).view(-1, 3, 3)


def clipped_round_trip(x):
    h = (x * 2).detach()
    back = torch.from_numpy(np.clip(h.numpy(), -0.5, 0.5) * 2.0)
    return torch.relu(back + h) * 3


def outside_array_written_through_tensor(x):
    t = torch.as_tensor(W)
    t.add_(1)
    return x + t


def _compare(fn, inputs, *, caller_writes=False):
    jitted = jit(fn, backend="eager")
    for x in inputs:
        expected, got = fn(x.clone()), jitted(x.clone())
        assert torch.equal(got, expected), (x, got, expected)
        if caller_writes:
            got.add_(5)
            expected.add_(5)
    return jitted.explain()


@pytest.mark.parametrize("fn", [scaled_identity, shared_then_written, array_written_after_read])
def test_a_write_to_the_tensor_or_array_does_not_reach_later_calls(fn):
    size = 9 if fn is scaled_identity else 3
    report = _compare(fn, [torch.ones(size)] * 4)
    assert not report.fallbacks and report.graphs[0].hits == 3, str(report)


def test_the_caller_writing_a_returned_tensor_does_not_change_the_next_call():
    report = _compare(returns_the_tensor, [torch.ones(3)] * 4, caller_writes=True)
    assert report.graphs[0].hits == 3, str(report)


def test_from_numpy_of_a_constant_array_is_one_graph():
    report = _compare(
        pointnet_identity, [torch.randn(2, 9, generator=torch.Generator().manual_seed(n)) for n in range(4)]
    )
    assert not report.fallbacks and report.graph_count == 1 and report.graphs[0].hits == 3, str(report)


def test_from_numpy_of_an_array_read_from_tensor_data_is_rechecked():
    same = torch.tensor([[0.1, -0.9, 0.3]])
    report = _compare(clipped_round_trip, [same, same, torch.tensor([[0.7, 0.2, -0.1]]), same])
    assert not report.fallbacks, str(report)
    assert report.graph_count == 2 and sum(g.hits for g in report.graphs) == 2, str(report)


def test_from_numpy_of_an_array_it_refuses_raises_as_eagerly():
    def long_double(x):
        return x + torch.from_numpy(np.zeros(3, dtype=np.longdouble))

    jitted = jit(long_double, backend="eager")
    with pytest.raises(TypeError) as eager:
        long_double(torch.ones(3))
    with pytest.raises(TypeError) as jitted_error:
        jitted(torch.ones(3))
    assert str(jitted_error.value) == str(eager.value)


def test_an_outside_array_written_through_its_tensor_is_written_on_every_call():
    start = W.copy()
    try:
        expected_states = []
        for _ in range(3):
            outside_array_written_through_tensor(torch.ones(3))
            expected_states.append(W.copy())
        W[:] = start
        jitted = jit(outside_array_written_through_tensor, backend="eager")
        for state in expected_states:
            jitted(torch.ones(3))
            assert np.array_equal(W, state)
    finally:
        W[:] = start


class DropoutThenNumpy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        h = self.drop(x * 1.0)
        return h + torch.as_tensor(h.detach().numpy().copy()) * 0.5


def test_an_array_read_after_random_draws_resumes_with_the_array():
    """The array depends on the dropout mask, so it is checked right after the graph that drew it (a
    data break); when it differs the call resumes from there with the interpreter. It resumed with
    the array's key (a tuple) instead of the array: `'tuple' object has no attribute 'copy'`, and
    the failsafe ran the call again eagerly with a second dropout mask, a wrong result."""
    model = DropoutThenNumpy()
    jitted = jit(DropoutThenNumpy(), backend="eager")
    for seed in range(4):
        x = torch.randn(6, 3, generator=torch.Generator().manual_seed(seed))
        torch.manual_seed(seed)
        expected = model(x)
        torch.manual_seed(seed)
        assert torch.equal(jitted(x), expected)
    report = jitted.explain()
    assert not report.fallbacks, str(report)
    assert report.deopts == 3, str(report)
