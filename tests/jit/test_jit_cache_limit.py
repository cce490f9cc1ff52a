"""The cache limit as a long-running server needs it: a full cache keeps the entries that hit and runs
the calls that miss eagerly; explain() names the guard each miss failed, grouped (issue 44)."""

from __future__ import annotations

import torch

from jitlab.jit import jit
from jitlab.jit.frontend.cache import STARVED_MISSES


def scale(x, factor):
    return x * factor + 1


def labelled(x, factor):
    return x * factor + len(str(factor))  # str() reads the int: each value its own entry


def test_a_full_cache_keeps_serving_the_inputs_it_knows():
    fast = jit(labelled, backend="eager", max_entries=2)
    x = torch.ones(3)
    # an int Python reads by its value (a changed float or an int only computed with would become a
    # graph input after one miss)
    for factor in (2, 3):  # two entries: the cache is full
        fast(x, factor)
    for n in range(40):  # a server: mostly known inputs, now and then one never seen before
        factor = (2, 3, 2, 3, 10 + n)[n % 5]
        assert torch.equal(fast(x, factor), labelled(x, factor)), factor
    report = fast.explain()
    assert report.captures == 2 and not report.disabled, str(report)
    assert [g.hits for g in report.graphs] == [16, 16]
    assert report.eager_misses == 8  # the unknown inputs ran eagerly, the entries stayed
    # the capture of 3.0 missed entry 0 too
    assert report.miss_reasons[0] == "9 misses: entry 0: EQUALS_MATCH: args[1] == 2", report.miss_reasons


def test_each_miss_names_the_guard_that_failed():
    fast = jit(scale, backend="eager")
    calls = [
        (torch.ones(3), 2.0),
        (torch.ones(3, dtype=torch.float64), 2.0),  # dtype
        (torch.ones(3), 2),  # another type of number
        (torch.ones(3, 2), 2.0),  # rank
    ]
    for x, factor in calls:
        assert torch.equal(fast(x, factor), scale(x, factor))
    reasons = fast.explain().last_misses
    assert reasons[0] == (
        "entry 0: TENSOR_MATCH: tensor 'args[0]' dtype mismatch. expected Float, actual Double",
    )
    assert reasons[1][0] == "entry 0: EQUALS_MATCH: args[1] == 2.0"
    assert reasons[2][0] == "entry 0: TENSOR_MATCH: tensor 'args[0]' rank mismatch. expected 1, actual 2"
    text = str(fast.explain())
    assert "why calls missed (the first failed guard of each entry):" in text


def test_a_cache_that_serves_nothing_falls_back_for_good_saying_which_guards_failed():
    fast = jit(scale, backend="eager", max_entries=2)
    x = torch.ones(2)
    for n in range(2 + STARVED_MISSES + 3):
        assert torch.equal(fast(x, n), scale(x, n))
    report = fast.explain()
    assert report.captures == 2 and report.disabled, str(report)
    assert report.disabled.startswith(f"cache limit reached (2 entries) and the last {STARVED_MISSES} calls")
    assert "entry 0: EQUALS_MATCH: args[1] == 0" in report.disabled
    assert report.fallback_reasons[0].kind.value == "cache-limit"


def test_a_miss_after_the_guards_names_the_rechecked_value():
    def positive(x):
        return x * 2 if x.sum() > 0 else x - 1  # a speculation on data, re-checked after the graph

    fast = jit(positive, backend="eager")
    for sign in (1.0, 1.0, -1.0):
        x = torch.full((2,), sign)
        assert torch.equal(fast(x), positive(x))
    reason = fast.explain().last_misses[-1][0]
    assert reason.startswith("entry 0: the guards held; a value re-checked after the graph differed ("), (
        reason
    )
