"""Structured reasons: every fallback, graph break and specialisation of `.explain()` has a kind, a
message, the user's file:line when it has a place, and a hint; `.explain()` and `jitlab capture`
group them by kind."""

from __future__ import annotations

from collections import Counter

import torch

from jitlab.capture.report import reason_kinds
from jitlab.jit import jit
from jitlab.jit.reasons import ReasonKind, kind_of


def _with_local_class(x: torch.Tensor) -> torch.Tensor:
    class Local:  # a class statement: bytecode the interpreter runs natively, so a call break
        scale = 2

    return x * Local.scale


def _program(x: torch.Tensor) -> torch.Tensor:
    y = torch.relu(x)
    z = _with_local_class(y)  # the break's line
    return z + 1


BREAK_LINE = _program.__code__.co_firstlineno + 2


def test_a_graph_break_has_its_kind_its_line_and_a_hint() -> None:
    jitted = jit(_program, backend="eager")
    x = torch.randn(4)
    assert torch.equal(jitted(x), _program(x))
    assert torch.equal(jitted(x), _program(x))
    report = jitted.explain()
    [reason] = [r for r in report.reasons if r.what == "graph break"]
    assert reason.kind is ReasonKind.UNSUPPORTED_CODE
    assert reason.where == f"{__file__}:{BREAK_LINE}"
    assert "_with_local_class" in reason.message
    assert reason.hint
    assert list(report.by_kind()) == [ReasonKind.UNSUPPORTED_CODE]
    text = str(report)
    assert "why not one graph, by kind:" in text
    assert f"unsupported-code (1): {reason.hint}" in text


def test_a_fallback_is_grouped_by_its_kind() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    jitted = jit(fn, backend="eager")
    with torch.autocast("cpu"):
        jitted(torch.randn(3))
    report = jitted.explain()
    assert report.fallbacks
    groups = report.by_kind()
    assert ReasonKind.GLOBAL_STATE in groups
    assert any("autocast" in r.message for r in groups[ReasonKind.GLOBAL_STATE])


def test_known_messages_have_their_kind_and_unknown_ones_are_other() -> None:
    assert kind_of("library function map calls user code back") is ReasonKind.LIBRARY_CALLBACK
    assert kind_of("module Linear is called natively") is ReasonKind.NATIVE_CALL
    assert kind_of("Python decides on tensor data: x.sum().item() > 0") is ReasonKind.DATA_DEPENDENT
    assert kind_of("internal error planning the cache entry: KeyError: 1") is ReasonKind.INTERNAL
    assert kind_of("print(file=...) is not replayed") is ReasonKind.SIDE_EFFECT
    assert kind_of("something new") is ReasonKind.OTHER
    # the "unsupported: " every eager fallback's reason starts with does not hide its cause
    assert (
        kind_of("unsupported: cannot rebuild a ModelOutput of unknown origin") is ReasonKind.UNTRACKED_VALUE
    )
    assert kind_of("unsupported: Python decides on tensor data: x.item()") is ReasonKind.DATA_DEPENDENT
    assert kind_of("unsupported: a construct nobody named") is ReasonKind.UNSUPPORTED_CODE


def test_capture_counts_cases_per_kind() -> None:
    class Case:
        def __init__(self, name: str) -> None:
            self.name = name

    cases = [Case("a"), Case("b"), Case("c")]
    results = {
        ("a", "jitlab"): {"kinds": ["data-dependent", "side-effect"]},
        ("b", "jitlab"): {"kinds": ["data-dependent"]},
        ("c", "jitlab"): {"captured": True},
    }
    assert reason_kinds(cases, ["jitlab"], results) == {
        "jitlab": Counter({"data-dependent": 2, "side-effect": 1})
    }


def _reads_all_globals(x: torch.Tensor) -> torch.Tensor:
    y = x + 1
    names = globals()  # a builtin jitlab.jit does not run: the call falls back to eager
    return y * len(names) / len(names)


def test_a_fallback_names_the_line_where_its_cause_was_met():
    jitted = jit(_reads_all_globals, backend="eager")
    x = torch.ones(2)
    assert torch.equal(jitted(x), x + 1)
    reasons = [r for r in jitted.explain().reasons if r.what == "fallback"]
    line = _reads_all_globals.__code__.co_firstlineno + 2
    assert len(reasons) == 1 and "globals() is not supported" in reasons[0].message
    assert reasons[0].where == f"{__file__}:{line}"
    assert f"fallback at {__file__}:{line}" in str(jitted.explain())
