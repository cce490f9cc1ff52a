"""torch's global settings read by the program (`torch.get_default_dtype()`, `torch.get_num_threads()`):
what a capture read is checked again on every call.

Before, the value read at capture was baked into the entry: after `torch.set_default_dtype(
torch.float64)` between calls, `x.to(torch.get_default_dtype())` still made float32."""

from __future__ import annotations

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
