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
