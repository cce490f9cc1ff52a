"""What a program's function runs is guarded: its `__code__`, `__defaults__` and `__kwdefaults__`
are writable, and replacing one between calls must be seen (TorchDynamo sees all three).

Before, only defaults that are not numbers or strings were guarded (as items of `__defaults__`), so
after `helper.__code__ = other.__code__` or `helper.__defaults__ = (5.0,)` the entry ran the old
code or default."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from jitlab.jit import jit


def _functions() -> dict[str, tuple[Callable, Callable[[], None]]]:
    """A program per change, each calling its own helper (the changes are made to the helpers)."""

    def doubled(t: torch.Tensor) -> torch.Tensor:
        return t * 2

    def tripled(t: torch.Tensor) -> torch.Tensor:
        return t * 3

    def scaled(t: torch.Tensor, k: float = 2.0) -> torch.Tensor:
        return t * k

    def keyword_scaled(t: torch.Tensor, *, k: float = 2.0) -> torch.Tensor:
        return t * k

    def keyword_scaled_again(t: torch.Tensor, *, k: float = 2.0) -> torch.Tensor:
        return t * k

    return {
        "code replaced": (lambda x: doubled(x), lambda: setattr(doubled, "__code__", tripled.__code__)),
        "defaults replaced": (lambda x: scaled(x), lambda: setattr(scaled, "__defaults__", (5.0,))),
        "keyword defaults replaced": (
            lambda x: keyword_scaled(x),
            lambda: setattr(keyword_scaled, "__kwdefaults__", {"k": 5.0}),
        ),
        "keyword default changed in place": (
            lambda x: keyword_scaled_again(x),
            lambda: keyword_scaled_again.__kwdefaults__.__setitem__("k", 5.0),
        ),
    }


@pytest.mark.parametrize("change", list(_functions()))
def test_a_function_changed_between_calls_is_seen(change: str) -> None:
    program, make_change = _functions()[change]
    jitted = jit(program, backend="eager")
    x = torch.ones(2)
    for step in range(5):
        if step == 2:
            make_change()
        assert torch.equal(jitted(x), program(x)), step
    report = jitted.explain()
    assert report.captures == 2
    assert sum(g.hits for g in report.graphs) == 3
