"""Tensor data that escapes to Python (numpy arrays) and outside lists read after the call appended
to them: served by graphs (hits) where the values repeat, always equal to eager (results, outside
lists, printed text), and falling back with a reason where the call cannot be reproduced."""

from __future__ import annotations

import numpy as np
import torch

import jitlab

LOG: list = []


def numpy_scale(x):
    y = x * 2
    m = float(y.detach().numpy().max())
    return y / m


def asarray_sum(x):
    arr = np.asarray(x)
    return x + float(arr.sum())


def nan_numpy(x):
    arr = (x / x).numpy()  # NaN where x is 0
    return x + float(np.nansum(arr)) + int(np.isnan(arr).sum())


def writes_through_numpy(x):
    arr = x.numpy()
    arr[0] = 7.0  # changes x: no torch operation the graph could record
    return x * 2


def append_then_len(x):
    y = x.sin()
    LOG.append(int(y.argmax()))
    return y * len(LOG)


def append_then_read(x):
    LOG.append(float(x.sum()))
    LOG.append(3)
    total = 0.0
    for v in LOG:
        total = total + v
    print("log", len(LOG), LOG[-1])
    return x * total + LOG[-1] + LOG[0] + sum(LOG) + len(LOG[1:])


def pop_then_read(x):
    LOG.append(2)
    LOG.pop(0)
    return x * len(LOG)


def _run(fn, inputs, log_before, capsys):
    """Run `fn` under the JIT and eagerly on the same inputs and outside lists; compare everything."""
    jitted = jitlab.jit(fn, backend="eager")
    for x, before in zip(inputs, log_before):
        LOG[:] = list(before)
        xj = x.clone()
        got = jitted(xj)
        log_jit, out_jit = list(LOG), capsys.readouterr().out
        LOG[:] = list(before)
        xe = x.clone()
        want = fn(xe)
        log_eager, out_eager = list(LOG), capsys.readouterr().out
        assert torch.allclose(got, want, equal_nan=True)
        assert torch.equal(xj, xe)
        assert log_jit == log_eager
        assert out_jit == out_eager
    return jitted.explain()


def _hits(report):
    return sum(g.hits for g in report.graphs)


def test_numpy_round_trip_is_served_by_graphs(capsys):
    x, other = torch.randn(5), torch.randn(5)
    report = _run(numpy_scale, [x, x, other, other, x], [[]] * 5, capsys)
    assert not report.fallbacks
    assert report.captures == 2 and _hits(report) == 3
    assert any("numpy(...)" in s for g in report.graphs for s in g.speculations)


def test_numpy_values_that_change_every_call_stay_correct(capsys):
    inputs = [torch.randn(5) for _ in range(10)]
    report = _run(numpy_scale, inputs, [[]] * 10, capsys)
    # recaptured up to the cache limit, then the calls that miss run eagerly (as for .item()), the
    # entries kept; the guard that failed is named
    assert report.captures == 8 and report.eager_misses == 2 and _hits(report) == 0
    assert report.miss_reasons and "numpy" in report.miss_reasons[0]


def test_np_asarray_and_nan_arrays_are_compared(capsys):
    x = torch.tensor([0.0, 1.0, 0.0])
    report = _run(asarray_sum, [x, x, x + 1, x + 1], [[]] * 4, capsys)
    assert not report.fallbacks and _hits(report) == 2
    report = _run(nan_numpy, [x, x, x + 1, x], [[]] * 4, capsys)
    assert not report.fallbacks and _hits(report) == 2


def test_a_write_through_a_numpy_array_is_not_cached(capsys):
    report = _run(writes_through_numpy, [torch.ones(3)] * 3, [[]] * 3, capsys)
    assert _hits(report) == 0
    assert any("numpy array sharing memory" in f for f in report.fallbacks)


def test_append_then_len_of_an_outside_list(capsys):
    x = torch.randn(5)
    befores = [[], [], [4], [4], [], [4, 1]]
    report = _run(append_then_len, [x, torch.randn(5), x, x, x, x], befores, capsys)
    assert not report.fallbacks
    assert _hits(report) >= 3  # the same length before the call: the same entry


def test_append_then_index_iterate_slice_and_sum(capsys):
    x = torch.randn(3)
    befores = [[], [], [5.0, 1.0], [5.0, 1.0], [5.0, 2.0], []]
    report = _run(append_then_read, [x, x * 2, x, x, x, x], befores, capsys)
    assert not report.fallbacks
    assert _hits(report) >= 2


def test_a_pop_then_a_read_is_guarded_on_the_items_before_the_call(capsys):
    """`pop` reads an item: the list's items from before the call are guarded (they were not, and
    the call ran eagerly); other items before the call miss the guards and are captured again."""
    befores = [[1, 2], [1, 2], [1, 2], [3, 2], [3, 2, 5]]
    report = _run(pop_then_read, [torch.randn(3)] * 5, befores, capsys)
    assert not report.fallbacks
    assert _hits(report) == 2 and report.captures == 3


PICKS: list = []


def picks_window(x):
    for row in x:
        PICKS.append(int(row.argmax()))
    if len(PICKS) > 8:
        del PICKS[: len(PICKS) - 8]
    return x.sum(0) * sum(PICKS)


def test_sum_of_an_outside_list_guards_its_items_from_before_the_call():
    """`sum(PICKS)` of numbers read from data took the list's older items as constants without
    guarding them: once the list's length stopped changing, a cached graph summed the items of
    the call it was captured on (a wrong result from the sixth call on)."""
    torch.manual_seed(0)
    inputs = [torch.randn(3, 4) for _ in range(8)]
    PICKS.clear()
    expected = []
    for x in inputs:
        expected.append((picks_window(x), list(PICKS)))
    PICKS.clear()
    jitted = jitlab.jit(picks_window, backend="eager")
    for x, (out, picks) in zip(inputs, expected):
        assert torch.equal(jitted(x), out)
        assert PICKS == picks
    # the slice deleted, the list is read: guarded on its items from before the call (it ran eagerly)
    assert jitted.explain().fallbacks == ()
