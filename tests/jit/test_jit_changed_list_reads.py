"""An outside list, dict or set of scalars read after the call changed it other than by appends
(`del L[:k]`, `pop`, `sort`, `remove`, an item write, a key deleted) is served by a graph, guarded
on what the container held before the call.

jitlab.jit used to run such calls eagerly ("reads a list after changing it in the same call"), e.g.
a sliding window of the last eight argmaxes of a tensor's rows, summed in the same call (TorchDynamo
runs no graph there either; test_jit_escape_breaks.py `picks_window`)."""

from __future__ import annotations

import pytest
import torch

from jitlab.jit import jit

WINDOW: list[int] = []
ITEMS: list = []


def window_of_argmaxes(x):
    for row in x:
        WINDOW.append(int(row.argmax()))
    if len(WINDOW) > 8:
        del WINDOW[: len(WINDOW) - 8]
    return x.sum(0) * sum(WINDOW)


def pop_then_sum(x):
    first = ITEMS.pop(0)
    return x * first + sum(ITEMS)


def sort_then_smallest(x):
    ITEMS.sort()
    return x * ITEMS[0] - ITEMS[-1]


def write_then_iterate(x):
    ITEMS[0] = ITEMS[0] + 1
    for v in ITEMS:
        x = x + v
    return x


def delete_without_read(x):
    del ITEMS[-1]
    return x * 2


def _reasons(jitted) -> str:
    report = jitted.explain()
    return " ".join(str(r) for r in report.fallbacks) + " " + str(report)


def test_a_pop_then_a_read_is_one_cached_graph_guarded_on_the_items_before():
    jitted = jit(pop_then_sum, backend="eager")
    for _ in range(3):
        ITEMS[:] = [2, 3, 4]
        x = torch.randn(3)
        assert torch.equal(jitted(x), x * 2 + 7)
        assert ITEMS == [3, 4]
    report = jitted.explain()
    assert report.fallbacks == () and report.captures == 1 and report.graphs[0].hits == 2
    ITEMS[:] = [5, 1, 1]  # same length, other items: the guards on the items before the call miss
    x = torch.randn(3)
    assert torch.equal(jitted(x), x * 5 + 2)
    assert ITEMS == [1, 1]
    ITEMS[:] = [1, 1, 1, 1]  # another length
    assert torch.equal(jitted(x), x + 3)
    assert ITEMS == [1, 1, 1]


def test_a_sort_then_a_read_equals_eager_on_every_order():
    jitted = jit(sort_then_smallest, backend="eager")
    for start in ([3, 1, 2], [3, 1, 2], [1, 2, 3], [9, 0, 4]):
        ITEMS[:] = start
        x = torch.randn(3)
        expected = x * min(start) - max(start)
        assert torch.equal(jitted(x), expected), start
        assert ITEMS == sorted(start)
    assert jitted.explain().fallbacks == ()


def test_an_item_write_then_a_loop_over_the_list_sees_the_write():
    jitted = jit(write_then_iterate, backend="eager")
    for start in ([1, 2], [1, 2], [5, 0, 1]):
        ITEMS[:] = start
        x = torch.randn(2)
        expected = x + (start[0] + 1) + sum(start[1:])
        assert torch.equal(jitted(x), expected), start
        assert ITEMS == [start[0] + 1, *start[1:]]
    assert jitted.explain().fallbacks == ()


def test_a_list_changed_but_not_read_is_not_guarded_on_its_items():
    """Only a read after the change guards the items: a list whose last item is deleted and which is
    never read serves every content of the same length from one entry. (`pop` reads an item: its
    result is guarded like a read.)"""
    jitted = jit(delete_without_read, backend="eager")
    for start in ([1, 2, 3], [4, 5, 6], [7, 8, 9]):
        ITEMS[:] = start
        x = torch.randn(2)
        assert torch.equal(jitted(x), x * 2)
        assert ITEMS == start[:-1]
    report = jitted.explain()
    assert report.captures == 1 and report.graphs[0].hits == 2


def test_a_list_of_tensors_read_after_a_pop_is_guarded_on_the_tensors_before():
    """`pop` depends on positions only, so a list of tensors is fine: the tensors it held before the
    call are graph inputs where they were, and a hit reads the new ones (it used to run eagerly:
    "list.pop on an outside list whose content before the call is not known")."""
    jitted = jit(pop_then_sum, backend="eager")
    for n in range(4):
        start = [torch.tensor(2.0 + n), torch.tensor(3.0 * n)]
        ITEMS[:] = start
        x = torch.randn(3)
        assert torch.equal(jitted(x), x * (2.0 + n) + 3.0 * n)
        assert len(ITEMS) == 1 and ITEMS[0] is start[1]
    report = jitted.explain()
    assert report.fallbacks == () and report.captures == 1 and report.graphs[0].hits == 3, _reasons(jitted)
    ITEMS[:] = [torch.tensor(1.0), torch.tensor(1.0), torch.tensor(5.0)]  # another length
    x = torch.randn(3)
    assert torch.equal(jitted(x), x + 6.0)


def test_a_list_of_tensors_sorted_still_runs_eagerly_with_the_reason():
    """`sort` compares the items: on tensors that is a decision on their data, not on positions."""
    jitted = jit(sort_then_smallest, backend="eager")
    for n in range(2):
        ITEMS[:] = [torch.tensor(3.0 + n), torch.tensor(1.0)]
        x = torch.randn(3)
        assert torch.equal(jitted(x), x * 1.0 - (3.0 + n))
    assert "list.sort on an outside list whose content before the call is not known" in _reasons(jitted)


def test_a_list_of_tensors_read_after_a_slice_deletion_is_guarded_on_the_tensors_before():
    """The tensors the list held before the call are graph inputs, guarded where they were; the ints
    appended from tensor data are re-checked (test_jit_changed_tensor_lists.py has more)."""
    jitted = jit(window_of_argmaxes, backend="eager")
    for n in range(4):
        start = [torch.tensor(float(k + n)) for k in range(9)]
        WINDOW[:] = start
        x = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
        picked = [1, 0]
        expected = x.sum(0) * (sum(start[3:]) + 1)
        assert torch.equal(jitted(x), expected)
        assert len(WINDOW) == 8 and all(a is b for a, b in zip(WINDOW, start[3:])) and WINDOW[6:] == picked
    report = jitted.explain()
    assert report.fallbacks == () and report.captures == 1, _reasons(jitted)


STATS: dict = {}
SEEN: set = set()


def pop_key_then_len(x):
    seen = STATS.pop("seen", None)
    STATS["rows"] = STATS.get("rows", 0) + x.shape[0]
    return x * len(STATS) + (0 if seen is None else seen)


def delete_key_then_iterate(x):
    del STATS["drop"]
    for name, value in STATS.items():
        x = x + value * len(name)
    return x


def remove_then_len(x):
    SEEN.remove(2)
    return x * len(SEEN)


@pytest.mark.parametrize(
    "program, starts",
    [
        (
            pop_key_then_len,
            [{"seen": 3, "rows": 1}, {"seen": 3, "rows": 1}, {"rows": 4}, {"a": 1, "seen": 2}],
        ),
        (delete_key_then_iterate, [{"drop": 1, "ab": 2}, {"drop": 1, "ab": 2}, {"drop": 5, "ab": 2, "c": 1}]),
    ],
)
def test_a_dict_changed_then_read_equals_eager_and_is_served_by_graphs(program, starts):
    jitted = jit(program, backend="eager")
    for start in starts:
        STATS.clear()
        STATS.update(start)
        x = torch.randn(3)
        expected = program(x.clone())
        expected_stats = dict(STATS)
        STATS.clear()
        STATS.update(start)
        assert torch.equal(jitted(x.clone()), expected), start
        assert STATS == expected_stats and list(STATS) == list(expected_stats)
    report = jitted.explain()
    assert report.fallbacks == (), _reasons(jitted)
    assert sum(g.hits for g in report.graphs) == 1  # the repeated start


def test_a_set_element_removed_then_read_is_guarded_on_the_elements_before():
    jitted = jit(remove_then_len, backend="eager")
    for start in ({1, 2, 3}, {1, 2, 3}, {2, 5}):
        SEEN.clear()
        SEEN.update(start)
        x = torch.randn(2)
        assert torch.equal(jitted(x), x * (len(start) - 1))
        assert SEEN == start - {2}
    report = jitted.explain()
    assert report.fallbacks == () and report.captures == 2
