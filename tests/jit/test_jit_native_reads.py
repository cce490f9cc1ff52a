"""Numbers read from tensor data that native code reads (issue 22's wrong results, generalised).

With the eager backend a number read from tensor data stays a graph value until Python reads it. Native
code reads it without the interpreter seeing each read: through what it is handed (a bound method's
list, an iterator, a closure), as a generator yields to it, or right as it is made (`range(t)` calls
`Tensor.__index__`). Each program runs eagerly and through `jitlab.jit` over calls whose data changes
the outcome, and the results must be equal on every call; data-dependent ints that reach outside
state or the return value must be plain ints.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator

import pytest
import torch

from jitlab.jit import jit

CALLS = (
    torch.tensor([3.0, 1.0, 2.0]),
    torch.tensor([1.0, 5.0, 2.0]),
    torch.tensor([0.0, 1.0, 7.0]),
    torch.tensor([3.0, 1.0, 2.0]),
    torch.tensor([-1.0, -5.0, 2.0]),
    torch.tensor([2.0, 2.0, 1.0]),
)


def max_key_bound_method(x):
    s = x.tolist()
    return x[max(range(len(s)), key=s.__getitem__)]


def min_key_bound_method(x):
    s = x.tolist()
    return x[min(range(len(s)), key=s.__getitem__)]


def max_key_lambda(x):
    s = x.tolist()
    return x[max(range(len(s)), key=lambda i: s[i])]


def sorted_key_lambda(x):
    s = x.tolist()
    return x[sorted(range(len(s)), key=lambda i: s[i])[-1]]


def list_sort_key_lambda(x):
    s = x.tolist()
    order = list(range(len(s)))
    order.sort(key=lambda i: -s[i])
    return x[order[0]]


def sorted_enumerate_itemgetter(x):
    s = x.tolist()
    return x[sorted(enumerate(s), key=operator.itemgetter(1))[-1][0]]


def max_of_zip(x):
    s = x.tolist()
    return x[max(zip(s, range(len(s))))[1]]


def max_of_partial(x):
    best = functools.partial(max, x.tolist())
    return x * best()


def sum_of_map_lambda(x):
    s = x.tolist()
    return x * sum(map(lambda i: s[i], range(len(s))))


def sum_of_generator(x):
    return x * sum(v for v in x.tolist())


def filtered_sum_of_generator(x):
    return x * sum(v * v for v in x.tolist() if v > 1.5)


def max_of_generator(x):
    return x * max(v for v in x.tolist())


def fsum_of_generator(x):
    return x * math.fsum(v for v in x.tolist())


def any_of_generator(x):
    return x * 2 if any(v > 4.0 for v in x.tolist()) else x


def max_of_items_made_in_a_generator(x):
    return x * max(float(t) for t in x)


def sum_of_items_made_in_a_generator(x):
    return x * sum(t.item() for t in x)


def range_of_a_tensor(x):
    total = 0
    for i in range(x.argmax()):
        total += i + 1
    return x * total


def floor_of_a_tensor(x):
    return x * math.floor(x.max())


def set_comprehension_size(x):
    return x * len({int(v) % 3 for v in x.tolist()})


def dict_comprehension_size(x):
    return x * len({int(v) % 3: v for v in x.tolist()})


def set_literal_size(x):
    return x * len({int(x.argmax()), int(x.argmin())})


def joined_text_length(x):
    return x * len(",".join(str(v) for v in x.tolist()))


def text_lengths_of_a_mapped_generator(x):
    n = 0
    for text in map(str, (v for v in x.tolist())):  # str reads each value as the loop advances map
        n += len(text)
    return x * n


def count_of_a_filtered_generator(x):
    n = 0
    for _ in filter(None, (v - 1.0 for v in x.tolist())):
        n += 1
    return x * n


def last_of_an_accumulated_generator(x):
    return x * list(itertools.accumulate(v for v in x.tolist()))[-1]


def list_indexed_with_a_tensor(x):
    weights = [1.0, 2.0, 3.0]
    return x * weights[x.argmax()]


def list_written_at_a_tensor_index(x):
    flags = [0.0, 0.0, 0.0]
    flags[x.argmax()] = 1.0
    return x * (flags[0] + 2 * flags[1] + 4 * flags[2])


def text_lengths_of_items_mapped_before_any_is_read(x):
    n = 0
    for text in map(str, (t.item() for t in x)):  # the map is made before any number is read
        n += len(text)
    return x * n


def text_lengths_of_a_map_over_a_user_map(x):
    s = x.tolist()
    n = 0
    for text in map(str, map(lambda i: s[i], range(len(s)))):  # the inner map runs the lambda
        n += len(text)
    return x * n


PROGRAMS = [
    max_key_bound_method, min_key_bound_method, max_key_lambda, sorted_key_lambda,
    list_sort_key_lambda, sorted_enumerate_itemgetter, max_of_zip, max_of_partial, sum_of_map_lambda,
    sum_of_generator, filtered_sum_of_generator, max_of_generator, fsum_of_generator,
    any_of_generator, max_of_items_made_in_a_generator, sum_of_items_made_in_a_generator,
    range_of_a_tensor, floor_of_a_tensor, set_comprehension_size, dict_comprehension_size,
    set_literal_size, joined_text_length, text_lengths_of_a_mapped_generator,
    count_of_a_filtered_generator, last_of_an_accumulated_generator, list_indexed_with_a_tensor,
    list_written_at_a_tensor_index, text_lengths_of_items_mapped_before_any_is_read,
    text_lengths_of_a_map_over_a_user_map,
]  # fmt: skip


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_native_reads_of_data_dependent_numbers_equal_eager(program):
    fast = jit(program, backend="eager")
    expected = [program(x) for x in CALLS]
    got = [fast(x) for x in CALLS]
    assert [t.tolist() for t in got] == [t.tolist() for t in expected]
    assert len({repr(t.tolist()) for t in expected}) > 2  # the data does change the result


@pytest.mark.parametrize(
    "program",
    [sum_of_generator, sum_of_map_lambda, sum_of_items_made_in_a_generator],
    ids=lambda p: p.__name__,
)
def test_a_sum_over_an_iterator_stays_one_graph(program):
    """The items of `sum(gen)` are taken first and summed as a list: one graph for every value."""
    fast = jit(program, backend="eager")
    for x in CALLS:
        assert fast(x).tolist() == program(x).tolist()
    report = fast.explain()
    assert len(report.graphs) == 1 and not report.fallbacks


def test_a_sum_whose_items_are_not_numbers_adds_the_rest_as_it_goes():
    """A tensor among the items: the builtin adds the rest (here tensors) itself, as eagerly."""

    def summed(x):
        return sum((t * w for t, w in zip(x, x.tolist())), 0.0)

    fast = jit(summed, backend="eager")
    for x in CALLS:
        assert fast(x).tolist() == summed(x).tolist()


def test_a_sum_of_a_generator_raising_midway_raises_as_eagerly():
    seen: list = []

    def summed(x):
        def values():
            for v in x.tolist():
                seen.append(v)
                if v > 4.0:
                    raise ValueError("too big")
                yield v

        return x * sum(values())

    fast = jit(summed, backend="eager")
    x = torch.tensor([1.0, 5.0, 2.0])
    with pytest.raises(ValueError, match="too big"):
        summed(x)
    eager_seen = list(seen)
    seen.clear()
    with pytest.raises(ValueError, match="too big"):
        fast(x)
    assert seen == eager_seen == [1.0, 5.0]


def _remembering():
    seen: set = set()
    counts: dict = {}
    pairs: dict = {}

    def remember(x):
        k = int(x.argmax())
        seen.update([k, int(x.argmin())])
        counts[k] = counts.get(k, 0) + 1
        pairs[(k, 0)] = 1
        return x * 2, {k}, {k: 1}, frozenset([k])

    return remember, (seen, counts, pairs)


def test_data_ints_in_outside_sets_and_dict_keys_and_returns_are_plain_ints():
    eager, expected = _remembering()
    for x in CALLS:
        eager(x)
    remember, state = _remembering()
    fast = jit(remember, backend="eager")
    for x in CALLS:
        _, returned_set, returned_dict, returned_frozen = fast(x)
        assert [type(v) for v in (*returned_set, *returned_dict, *returned_frozen)] == [int, int, int]
    seen, counts, pairs = state
    assert state == expected and sum(counts.values()) == len(CALLS) and len(seen) == 3
    assert [list(seen), list(counts), list(pairs)] == [
        list(expected[0]),
        list(expected[1]),
        list(expected[2]),
    ]
    assert {type(v) for v in seen} == {type(k) for k in counts} == {type(k[0]) for k in pairs} == {int}


def test_a_call_that_raises_leaves_plain_ints_in_what_it_wrote():
    log: list = []
    marks: set = set()

    def failing(x):
        log.append(int(x.argmax()))
        marks.add(int(x.argmin()))
        raise RuntimeError("after writing")

    fast = jit(failing, backend="eager")
    with pytest.raises(RuntimeError, match="after writing"):
        fast(torch.tensor([1.0, 3.0, 2.0]))
    assert log == [1] and marks == {0}
    assert type(log[0]) is int and {type(v) for v in marks} == {int}
