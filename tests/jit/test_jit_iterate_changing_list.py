"""A loop over an outside list that the loop itself changes sees the changes, as in eager code.

jitlab.jit used to iterate a snapshot of an outside list: `for v in L: ... L.append(...)` then
stopped after the old items (a wrong result: 3.0 where eager gives 26.0, on the first call
already), and an item write or a `pop` inside the loop was not seen either."""

from __future__ import annotations

import pytest
import torch

from jitlab.jit import jit

ITEMS: list[int] = []


def append_while_iterating(x):
    for v in ITEMS:
        x = x + v
        if v < 3:
            ITEMS.append(v + 10)
    return x


def enumerate_while_appending(x):
    for i, v in enumerate(ITEMS):
        x = x + v * i
        if v < 3:
            ITEMS.append(v + 10)
    return x


def pop_while_iterating(x):
    for v in ITEMS:
        x = x + v
        if len(ITEMS) > 2:
            ITEMS.pop()
    return x


def write_while_iterating(x):
    for v in ITEMS:
        x = x + v
        ITEMS[-1] = 7
    return x


def iterate_without_change(x):
    for v in ITEMS:
        x = x * v
    return x


@pytest.mark.parametrize(
    "program, start",
    [
        (append_while_iterating, [1, 2]),
        (enumerate_while_appending, [1, 2]),
        (pop_while_iterating, [1, 2, 3, 4]),
        (write_while_iterating, [1, 2, 3]),
    ],
)
def test_a_loop_sees_the_changes_it_makes_to_the_list(program, start):
    jitted = jit(program, backend="eager")
    for call in range(3):
        x = torch.randn(3)
        ITEMS[:] = start
        expected = program(x.clone())
        expected_items = list(ITEMS)
        ITEMS[:] = start
        got = jitted(x.clone())
        assert torch.equal(got, expected), (program.__name__, call)
        assert ITEMS == expected_items


def test_a_loop_over_an_unchanged_list_is_one_cached_graph():
    jitted = jit(iterate_without_change, backend="eager")
    ITEMS[:] = [2, 3]
    for _ in range(3):
        x = torch.randn(3)
        assert torch.equal(jitted(x), x * 2 * 3)
    stats = jitted.explain()
    assert stats.captures == 1 and stats.fallbacks == () and stats.graph_count == 1
    assert stats.graphs[0].hits == 2
    ITEMS[:] = [5]  # the length and the items are guarded
    x = torch.randn(3)
    assert torch.equal(jitted(x), x * 5)


def test_a_loop_that_only_appends_is_served_by_the_cache():
    """Items appended by the loop are the call's own values, and the appends are replayed: the entry
    is guarded on the list's items before the call and serves later calls that start from them."""
    jitted = jit(append_while_iterating, backend="eager")
    for _ in range(3):
        x = torch.randn(3)
        ITEMS[:] = [1, 2]
        expected = append_while_iterating(x.clone())
        ITEMS[:] = [1, 2]
        assert torch.equal(jitted(x.clone()), expected)
        assert ITEMS == [1, 2, 11, 12]
    report = jitted.explain()
    assert report.fallbacks == () and report.captures == 1 and report.graphs[0].hits == 2
    ITEMS[:] = [2, 1]  # other items: a guard misses, and the new capture is exact again
    x = torch.randn(3)
    assert torch.equal(jitted(x), x + 2 + 1 + 12 + 11)
    assert ITEMS == [2, 1, 12, 11]
