"""Builtins that read their caller's frame (`globals()`, `locals()`, `vars()`, `eval`/`exec` without
namespaces): jitlab.jit does not capture them, and the call it gives up on still returns what eager
code returns. Called natively from the interpreter they would see the interpreter's own frame."""

from __future__ import annotations

import pytest
import torch

import jitlab.jit

SCALE = 3


def counts_globals(x):
    y = x * 2
    return y + len(globals())


def reads_locals(x):
    y = x * 2
    k = 5
    return y + len(locals()) + locals()["k"]


def evaluates_in_its_frame(x):
    k = 4  # noqa: F841 - read by eval
    return x * eval("k + SCALE")


def executes_in_its_frame(x):
    names = {}
    exec("names['k'] = SCALE * 2")
    return x * names["k"]


def lists_its_variables(x):
    k = 4
    return x * len(vars()) + k


def reads_a_closure(x):
    k = 7

    def inner():
        return k + len(locals())

    return x * inner()


@pytest.mark.parametrize(
    "program",
    [
        counts_globals,
        reads_locals,
        evaluates_in_its_frame,
        executes_in_its_frame,
        lists_its_variables,
        reads_a_closure,
    ],
)
def test_a_builtin_reading_the_callers_frame_gives_eagers_result(program):
    fast = jitlab.jit.jit(program, backend="eager")
    for call in range(3):
        x = torch.full((2,), float(call + 1))
        assert torch.equal(fast(x), program(x)), f"call {call}"
    explanation = fast.explain()
    if explanation.disabled is not None:  # not captured: said so, with the builtin's name
        assert "is not supported" in explanation.disabled
