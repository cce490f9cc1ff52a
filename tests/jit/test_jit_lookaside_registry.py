"""The lookaside registry: one lookaside per library function, registered by decorator, and used by
a capture (a user `key=` function given to `sorted` is interpreted, so its reads are guarded)."""

from __future__ import annotations

import builtins
import functools

import pytest
import torch

from jitlab.jit import jit
from jitlab.jit.tracing import lookasides


def test_each_builtin_with_a_user_callback_has_one_lookaside() -> None:
    registered = {target for target, _impl in lookasides._LOOKASIDES.values()}
    for fn in (builtins.map, builtins.filter, builtins.sorted, builtins.min, builtins.max, functools.reduce,
               builtins.iter, builtins.next, list, tuple, dict, zip, sum, builtins.hash):  # fmt: skip
        assert fn in registered, fn


def test_a_second_lookaside_for_a_function_is_refused() -> None:
    before = dict(lookasides._LOOKASIDES)
    with pytest.raises(ValueError, match="two lookasides for sorted"):

        @lookasides.lookaside(builtins.sorted)
        def another(self, args, kwargs):  # pragma: no cover - never registered
            return None

    assert lookasides._LOOKASIDES == before


SCALE = {"w": 2.0}


def _key(t: torch.Tensor) -> float:
    return -float(t.sum()) * SCALE["w"]


def test_a_registered_lookaside_interprets_the_callback_and_guards_its_reads() -> None:
    def fn(xs: list[torch.Tensor]) -> torch.Tensor:
        ordered = sorted(xs, key=_key)
        return ordered[0] * 2

    xs = [torch.ones(3), torch.full((3,), 3.0), torch.zeros(3)]
    jitted = jit(fn, backend="eager")
    assert torch.equal(jitted(xs), fn(xs))
    assert torch.equal(jitted(xs), fn(xs))
    SCALE["w"] = -1.0  # read by the key function: a guard must notice
    try:
        assert torch.equal(jitted(xs), fn(xs))
    finally:
        SCALE["w"] = 2.0
    report = jitted.explain()
    assert not report.fallbacks
    assert report.captures == 2
    assert not report.graph_breaks  # sorted ran its key through the interpreter, not natively
