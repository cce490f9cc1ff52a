"""Outside numpy arrays and other mutable buffers (`array.array`, `bytearray`, `deque`) read by native
code: the cache entry is guarded on their content, and a call that writes them is not cached.

Before, such objects were guarded by identity only: `x * float(W.sum())` kept the sum of the first
call in its graph, and a call after `W[0] = 2` between calls returned the old product, a wrong
result (every reading program below failed that way on the old code). A call that wrote the array
with `W += 1` was cached without the write, so the array stopped changing (an item write was
already kept out of the cache, for another reason). A float compared equal to
`-0.0` served a graph captured with `0.0` (`1 / (x * s)` is `inf` against `-inf`).
"""

from __future__ import annotations

import array
import collections
import math

import numpy as np
import pytest
import torch
from torch import nn

from jitlab.jit import jit

W = np.ones(3, dtype=np.float32)
BYTES = bytearray(b"\x01\x02")
FLOATS = array.array("f", [1.0, 2.0])
QUEUE: collections.deque = collections.deque([1.0, 2.0])


def method_sum(x):
    return x * float(W.sum())


def numpy_function(x):
    return x * float(np.sum(W))


def subscript(x):
    return x * float(W[0])


def item_of_max(x):
    return x * W.max().item()


def tolist_sum(x):
    return x * sum(W.tolist())


def iterated(x):
    return x * sum(float(w) for w in W)


def new_array_to_tensor(x):
    return x + torch.tensor(W * 2)


class TableModule(nn.Module):
    """A lookup table kept as a numpy attribute of a module."""

    def __init__(self):
        super().__init__()
        self.table = W

    def forward(self, x):
        return x * float(self.table.max())


READERS = [method_sum, numpy_function, subscript, item_of_max, tolist_sum, iterated, new_array_to_tensor]


def _run(fn, changes):
    """Call `fn` jitted and eagerly after each change of the outside state (each change applied to
    the same start for both); return the jitted callable's explanation."""
    jitted = jit(fn, backend="eager")
    for change in changes:
        start = W.copy()
        change()
        expected = fn(torch.arange(3.0))
        eager_after = W.copy()
        W[:] = start
        change()
        got = jitted(torch.arange(3.0))
        assert torch.equal(got, expected)
        assert np.array_equal(W, eager_after)
    return jitted.explain()


def _set(i, value):
    def change():
        W[i] = value

    return change


def _keep():
    pass


@pytest.mark.parametrize("fn", [*READERS, TableModule], ids=lambda f: f.__name__)
def test_a_changed_array_is_read_again_and_an_unchanged_one_hits(fn):
    W[:] = 1.0
    program = fn() if isinstance(fn, type) else fn
    explanation = _run(program, [_keep, _set(0, 5.0), _keep, _set(0, -2.0), _keep])
    assert not explanation.fallbacks
    assert explanation.captures == 3  # one per distinct content: the calls after _keep were hits
    assert sum(g.hits for g in explanation.graphs) == 2
    assert any("content of" in guard for g in explanation.graphs for guard in g.guards)


def increment(x):
    global W
    W += 1
    return x * float(W[0])


def item_write(x):
    W[1] = W[1] + 2.0
    return x * float(W[1])


@pytest.mark.parametrize("fn", [increment, item_write], ids=lambda f: f.__name__)
def test_a_call_that_writes_an_outside_array_is_not_cached(fn):
    W[:] = 1.0
    explanation = _run(fn, [_keep, _keep, _keep])
    assert explanation.graph_count == 0
    assert any("an outside ndarray" in m for m in explanation.fallbacks)


def _buffer_readers():
    return [
        (lambda x: x * sum(QUEUE), lambda i: QUEUE.__setitem__(0, float(i))),
        (lambda x: x * max(QUEUE), lambda i: QUEUE.__setitem__(1, 10.0 * i)),
        (lambda x: x * sum(FLOATS), lambda i: FLOATS.__setitem__(0, float(i))),
        (lambda x: x * FLOATS[0], lambda i: FLOATS.__setitem__(0, float(i))),
        (lambda x: x * BYTES[0], lambda i: BYTES.__setitem__(0, i + 1)),
    ]


@pytest.mark.parametrize("index", range(5))
def test_deque_array_and_bytearray_reads_follow_their_content(index):
    fn, change = _buffer_readers()[index]
    jitted = jit(fn, backend="eager")
    for i in [0, 0, 1, 2, 2]:
        change(i)
        assert torch.equal(jitted(torch.arange(3.0)), fn(torch.arange(3.0)))
    explanation = jitted.explain()
    assert not explanation.fallbacks
    assert explanation.captures == 3


def test_buffers_of_python_objects_are_not_cached():
    objects = np.array([1.0, "a"], dtype=object)
    queue = collections.deque([1.0, object()])

    def read_objects(x):
        return x * float(objects[0])

    def read_queue(x):
        return x * len(list(queue))

    for fn in (read_objects, read_queue):
        jitted = jit(fn, backend="eager")
        for _ in range(2):
            assert torch.equal(jitted(torch.ones(2)), fn(torch.ones(2)))
        explanation = jitted.explain()
        assert explanation.graph_count == 0
        assert any("of Python objects" in m for m in explanation.fallbacks)


def reciprocal_of_scaled(x, s):
    return 1 / (x * s)


def test_a_float_argument_guard_tells_minus_zero_from_zero():
    jitted = jit(reciprocal_of_scaled, backend="eager")
    x = torch.ones(2)
    for s in (0.0, -0.0, 0.0, -0.0):
        assert torch.equal(jitted(x, s), reciprocal_of_scaled(x, s))
    assert jitted.explain().captures == 2


def sign_of_first(x):
    first = x.tolist()[0]
    return torch.ones(2) * math.copysign(1.0, first)


def test_a_speculation_on_a_data_float_tells_minus_zero_from_zero():
    jitted = jit(sign_of_first, backend="eager")
    for first in (0.0, -0.0, 0.0, -0.0):
        x = torch.tensor([first, 1.0])
        assert torch.equal(jitted(x), sign_of_first(x))
    assert jitted.explain().captures == 2
