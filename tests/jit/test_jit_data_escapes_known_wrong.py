"""Wrong results of `jitlab.jit` found by the break corpus (`corpus/breaks/`, issue 22), reduced to
minimal programs. Each is a strict expected failure: when the JIT is fixed, the test passes, pytest
reports it as XPASS(strict) and the marker must go.

- A Python value read from `tolist()` that is compared inside a builtin's key function (`max(...,
  key=...)`, `sorted(..., key=...)`) is neither re-checked nor split on: the index it selects is baked
  into one unspecialised graph, and later calls with other data return the first call's row.
- `sum()` of a generator expression over `tolist()` values (`x * sum(v for v in x.tolist())`)
  bakes the first call's sum into one unspecialised graph: the builtin drives the generator
  natively, so the values lose their place in the graph and no re-check is recorded. A list
  comprehension or a `for` loop in the same place is right.
- An int read from tensor data (`int(t.argmax())`) stored in an outside set or as an outside dict's
  key leaves the JIT's internal `DataInt` in the user's container instead of a plain `int` (a list
  append gets a plain int).
"""

from __future__ import annotations

import pytest
import torch

from jitlab.jit import jit

CALLS = (torch.tensor([3.0, 1.0, 2.0]), torch.tensor([1.0, 5.0, 2.0]), torch.tensor([0.0, 1.0, 7.0]))


def _outputs(fn):
    fast = jit(fn, backend="eager")
    return [fn(x).item() for x in CALLS], [fast(x).item() for x in CALLS]


@pytest.mark.xfail(
    strict=True,
    reason="issue 22: tolist() values compared in max(key=...) are not re-checked; the first call's "
    "index is baked into one graph",
)
def test_tolist_values_compared_by_max_with_a_key():
    def pick_best(x):
        scores = x.tolist()
        best = max(range(len(scores)), key=scores.__getitem__)
        return x[best]

    expected, got = _outputs(pick_best)
    assert expected == [3.0, 5.0, 7.0]
    assert got == expected  # jitlab.jit returns [3.0, 1.0, 0.0]: row 0 on every call


@pytest.mark.xfail(
    strict=True,
    reason="issue 22: tolist() values compared in sorted(key=lambda ...) are not re-checked; the first "
    "call's order is baked into one graph",
)
def test_tolist_values_compared_by_sorted_with_a_lambda_key():
    def pick_best(x):
        scores = x.tolist()
        best = sorted(range(len(scores)), key=lambda i: scores[i])[-1]
        return x[best]

    expected, got = _outputs(pick_best)
    assert got == expected  # jitlab.jit returns [3.0, 1.0, 0.0]


@pytest.mark.xfail(
    strict=True,
    reason="issue 22: sum() of a generator over tolist() values bakes the first call's sum into the graph",
)
def test_sum_of_a_generator_over_tolist_values():
    def scaled(x):
        return x * sum(v for v in x.tolist())

    fast = jit(scaled, backend="eager")
    first, second = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, 1.0, 1.0])
    assert fast(first).tolist() == [6.0, 12.0, 18.0]
    assert fast(second).tolist() == [8.0, 4.0, 4.0]  # jitlab.jit returns [12.0, 6.0, 6.0]


def test_sum_of_a_list_comprehension_over_tolist_values():
    """The same sum over a list comprehension is right (the contrast above)."""

    def scaled(x):
        return x * sum([v for v in x.tolist()])

    fast = jit(scaled, backend="eager")
    assert fast(torch.tensor([1.0, 2.0, 3.0])).tolist() == [6.0, 12.0, 18.0]
    assert fast(torch.tensor([2.0, 1.0, 1.0])).tolist() == [8.0, 4.0, 4.0]


def test_tolist_values_compared_directly_are_rechecked():
    """The same selection without a key function is speculated and correct (the contrast above)."""

    def pick_best(x):
        scores = x.tolist()
        return x[scores.index(max(scores))]

    expected, got = _outputs(pick_best)
    assert got == expected == [3.0, 5.0, 7.0]


@pytest.mark.xfail(
    strict=True, reason="issue 22: int(t) added to an outside set stays jitlab.jit.graph.DataInt"
)
def test_int_from_data_added_to_an_outside_set_is_a_plain_int():
    seen: set = set()

    def remember(x):
        seen.add(int(x.argmax()))
        return x * 2

    fast = jit(remember, backend="eager")
    for x in CALLS:
        fast(x)
    assert seen == {0, 1, 2}
    assert {type(v) for v in seen} == {int}  # jitlab.jit leaves DataInt in the set


@pytest.mark.xfail(
    strict=True, reason="issue 22: int(t) used as an outside dict's key stays jitlab.jit.graph.DataInt"
)
def test_int_from_data_as_an_outside_dict_key_is_a_plain_int():
    counts: dict = {}

    def count(x):
        counts[int(x.argmax())] = 1
        return x * 2

    fast = jit(count, backend="eager")
    for x in CALLS:
        fast(x)
    assert counts == {0: 1, 1: 1, 2: 1}
    assert {type(k) for k in counts} == {int}


def test_int_from_data_appended_to_an_outside_list_is_a_plain_int():
    """The list append is right (the contrast above)."""
    log: list = []

    def remember(x):
        log.append(int(x.argmax()))
        return x * 2

    fast = jit(remember, backend="eager")
    for x in CALLS:
        fast(x)
    assert log == [0, 1, 2] and {type(v) for v in log} == {int}
