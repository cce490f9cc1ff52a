"""Wrong results of `jitlab.jit` found by the break corpus (`corpus/breaks/`, issue 22), reduced to
minimal programs, now fixed (they were strict expected failures); each beside its contrast.

- A Python value read from `tolist()` compared inside a builtin's key function (`max(...,
  key=scores.__getitem__)`, `sorted(..., key=lambda ...)`) was baked into one graph: native code reads
  what it can reach from its arguments (the list behind a bound method), and that is now a read
  (jitlab/jit/tracing/native_reads.py), re-checked on every call.
- `sum()` of a generator expression over `tolist()` values baked the first call's sum: the builtin
  drove the generator natively. A `sum` over an iterator now takes the items first and sums them as
  a list (one graph, as for a list comprehension); what other builtins read as a generator yields it
  is a read (Tracer.yielded).
- An int read from tensor data stored in an outside set or as an outside dict's key stayed the JIT's
  internal `DataInt`: hashed values are plain ints (graph/plain.py).
"""

from __future__ import annotations

import torch

from jitlab.jit import jit

CALLS = (torch.tensor([3.0, 1.0, 2.0]), torch.tensor([1.0, 5.0, 2.0]), torch.tensor([0.0, 1.0, 7.0]))


def _outputs(fn):
    fast = jit(fn, backend="eager")
    return [fn(x).item() for x in CALLS], [fast(x).item() for x in CALLS]


def test_tolist_values_compared_by_max_with_a_key():
    def pick_best(x):
        scores = x.tolist()
        best = max(range(len(scores)), key=scores.__getitem__)
        return x[best]

    expected, got = _outputs(pick_best)
    assert expected == [3.0, 5.0, 7.0]
    assert got == expected  # jitlab.jit returns [3.0, 1.0, 0.0]: row 0 on every call


def test_tolist_values_compared_by_sorted_with_a_lambda_key():
    def pick_best(x):
        scores = x.tolist()
        best = sorted(range(len(scores)), key=lambda i: scores[i])[-1]
        return x[best]

    expected, got = _outputs(pick_best)
    assert got == expected  # jitlab.jit returns [3.0, 1.0, 0.0]


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
