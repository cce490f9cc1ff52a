"""Iterators kept between calls (`itertools.count()` as a step counter, `iter(values)`, a `map`):
stepping one inside the call changes where it stands, state outside the graph.

Before, an entry was captured with the values the first call took from the iterator and served them
again on every hit: `next(COUNTER)` returned 0 on every call. Now the capture is not cached and the
call runs eagerly, with the reason in `explain()`."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest
import torch

from jitlab.jit import jit


def next_of(iterator: Iterator) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: x * next(iterator)


def summed_slice_of(iterator: Iterator) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: x * sum(itertools.islice(iterator, 2))


def looped_over(iterator: Iterator) -> Callable[[torch.Tensor], torch.Tensor]:
    def program(x: torch.Tensor) -> torch.Tensor:
        for value in iterator:
            return x * value
        return x

    return program


ITERATORS: dict[str, Callable[[], Iterator]] = {
    "count": itertools.count,
    "cycle": lambda: itertools.cycle([1.0, 2.0, 3.0]),
    "list iterator": lambda: iter([float(i) for i in range(20)]),
    "map": lambda: map(float, range(20)),
}


@pytest.mark.parametrize("form", [next_of, summed_slice_of, looped_over], ids=lambda f: f.__name__)
@pytest.mark.parametrize("kind", list(ITERATORS))
def test_an_outside_iterator_stepped_in_the_call_runs_eagerly(form: Callable, kind: str) -> None:
    program, eager = form(ITERATORS[kind]()), form(ITERATORS[kind]())
    jitted = jit(program, backend="eager")
    x = torch.ones(2)
    for step in range(5):
        assert torch.equal(jitted(x), eager(x)), step
    report = jitted.explain()
    assert sum(g.hits for g in report.graphs) == 0
    assert "steps an outside" in str(report)


def test_an_iterator_made_in_the_call_is_captured() -> None:
    def program(x: torch.Tensor) -> torch.Tensor:
        values = iter([1.0, 2.0, 3.0])
        next(values)
        return x * next(values) + sum(itertools.islice(values, 1))

    jitted = jit(program, backend="eager")
    x = torch.ones(2)
    for _ in range(4):
        assert torch.equal(jitted(x), program(x))
    report = jitted.explain()
    assert report.captures == 1
    assert sum(g.hits for g in report.graphs) == 3
