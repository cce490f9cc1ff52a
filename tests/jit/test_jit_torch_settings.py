"""State outside the graph that the program reads: torch's global settings
(`torch.get_default_dtype()`, `torch.get_num_threads()`), checked again on every call, and the
clock and entropy (`datetime.datetime.now()`, `os.urandom`), which keep the call eager.

Before, the value read at capture was baked into the entry: after `torch.set_default_dtype(
torch.float64)` between calls, `x.to(torch.get_default_dtype())` still made float32."""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Iterator

import pytest
import torch

from jitlab.jit import jit


@pytest.fixture
def default_dtype() -> Iterator[None]:
    saved = torch.get_default_dtype()
    yield
    torch.set_default_dtype(saved)


@pytest.fixture
def threads() -> Iterator[None]:
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


def to_default_dtype(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.get_default_dtype()) * 2


def scaled_by_threads(x: torch.Tensor) -> torch.Tensor:
    return x * torch.get_num_threads()


def _check(program: Callable, change: Callable[[], None]) -> None:
    jitted = jit(program, backend="eager")
    x = torch.ones(3)
    for step in range(5):
        if step == 2:
            change()
        got, want = jitted(x), program(x)
        assert got.dtype == want.dtype and torch.equal(got, want), step
    report = jitted.explain()
    assert report.captures == 2
    assert sum(g.hits for g in report.graphs) == 3


def test_the_default_dtype_read_is_checked_on_every_call(default_dtype: None) -> None:
    _check(to_default_dtype, lambda: torch.set_default_dtype(torch.float64))


def test_the_thread_count_read_is_checked_on_every_call(threads: None) -> None:
    _check(scaled_by_threads, lambda: torch.set_num_threads(max(1, torch.get_num_threads() % 2 + 1)))


def now_in_microseconds(x: torch.Tensor) -> torch.Tensor:
    return x * datetime.datetime.now().microsecond


def random_byte(x: torch.Tensor) -> torch.Tensor:
    return x * os.urandom(1)[0]


@pytest.mark.parametrize("program", [now_in_microseconds, random_byte], ids=lambda p: p.__name__)
def test_clock_and_entropy_reads_are_not_served_from_an_entry(program: Callable) -> None:
    """`datetime.datetime.now()` (a C class's method, whose module torch's functions do not name)
    and `os.urandom` (module `posix`) read state outside the graph: the call runs eagerly every
    time, where an entry would return the first call's value again."""
    jitted = jit(program, backend="eager")
    for _ in range(3):
        jitted(torch.ones(2))
    report = jitted.explain()
    assert sum(g.hits for g in report.graphs) == 0
    assert "state outside the graph" in str(report)
