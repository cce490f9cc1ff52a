"""Shared helpers for the jitlab.jit tests: run a program eagerly and under the JIT, compare."""

from __future__ import annotations

import contextlib
import copy
import io
import random
from typing import Any

import torch

from jitlab.jit import jit


def same(a: Any, b: Any) -> bool:
    """Structural equality with tensors compared by value, dtype, shape and requires_grad."""
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and a.requires_grad == b.requires_grad
            and torch.allclose(a, b, equal_nan=True)
        )
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(a) is type(b) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "__dataclass_fields__"):
        return type(a) is type(b) and all(same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return bool(a == b)


def run_captured(fn: Any, seed: int) -> tuple[Any, str]:
    """Call `fn()` under fixed seeds, capturing stdout; an exception is returned as its type."""
    torch.manual_seed(seed)
    random.seed(seed)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            value = fn()
    except Exception as exc:  # compared by type with the other run
        value = ("raised", type(exc))
    return value, out.getvalue()


def check_program(
    make: Any, inputs: list[tuple[tuple, dict]], backend: str = "eager", observe: Any = None
) -> Any:
    """Build the program twice (eager, jit), call both on each input, assert equal results/effects.

    Returns the jitted callable so that tests can inspect `explain()`.
    """
    eager = make()
    compiled_model = copy.deepcopy(eager) if isinstance(eager, torch.nn.Module) else make()
    jitted = jit(compiled_model, backend=backend)
    for n, (args, kwargs) in enumerate(inputs):
        e_args, e_kwargs = copy.deepcopy((args, kwargs))
        j_args, j_kwargs = copy.deepcopy((args, kwargs))
        expected, e_out = run_captured(lambda: eager(*e_args, **e_kwargs), n)  # noqa: B023
        got, j_out = run_captured(lambda: jitted(*j_args, **j_kwargs), n)  # noqa: B023
        assert same(expected, got), f"call {n}: {expected!r} != {got!r}"
        assert e_out == j_out, f"call {n}: printed {e_out!r} != {j_out!r}"
        assert same(e_args, j_args), f"call {n}: arguments mutated differently"
        if isinstance(eager, torch.nn.Module):
            for (name, a), (_, b) in zip(eager.state_dict().items(), compiled_model.state_dict().items()):
                assert same(a, b), f"call {n}: state {name} differs"
        if observe is not None:
            assert same(observe(eager), observe(compiled_model)), f"call {n}: observed state differs"
    return jitted


def assert_one_graph(jitted: Any, hits: int = 1) -> None:
    """The call ran as one graph, without a fallback or a break, and was served from the cache at
    least `hits` times."""
    report = jitted.explain()
    assert report.fallbacks == (), report.fallbacks
    assert report.breaks == (), report.breaks
    assert report.graphs_per_call == 1
    assert sum(g.hits for g in report.graphs) >= hits
