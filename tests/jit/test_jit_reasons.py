"""Structured reasons: every fallback, graph break and specialisation of `.explain()` has a kind, a
message, the user's file:line when it has a place, and a hint; `.explain()` and `jitlab capture`
group them by kind."""

from __future__ import annotations

import ast
import heapq
import io
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch

from jitlab.capture.report import reason_kinds
from jitlab.jit import jit
from jitlab.jit.reasons import HINTS, PRECEDENCE, Reason, ReasonKind, combined

ROOT = Path(__file__).resolve().parents[2]


def _with_class_pattern(x: torch.Tensor) -> torch.Tensor:
    match x:
        case torch.Tensor():  # a class pattern (MATCH_CLASS): bytecode the interpreter runs natively
            return x * 2
    return x


def _program(x: torch.Tensor) -> torch.Tensor:
    y = torch.relu(x)
    z = _with_class_pattern(y)  # the break's line
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
    assert "_with_class_pattern" in reason.message
    assert reason.hint
    assert list(report.by_kind()) == [ReasonKind.UNSUPPORTED_CODE]
    text = str(report)
    assert "why not one graph, by kind:" in text
    assert f"unsupported-code (1): {reason.hint}" in text


def test_a_fallback_is_grouped_by_its_kind() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    jitted = jit(fn, backend="eager")
    handle = torch.nn.modules.module.register_module_forward_hook(lambda module, args, out: None)
    try:
        jitted(torch.randn(3))
    finally:
        handle.remove()
    report = jitted.explain()
    assert report.fallbacks
    groups = report.by_kind()
    assert ReasonKind.GLOBAL_STATE in groups
    assert any("global module hooks" in r.message for r in groups[ReasonKind.GLOBAL_STATE])


def test_a_fallback_of_several_problems_is_filed_under_the_kind_that_comes_first() -> None:
    problems = [
        Reason(ReasonKind.SIDE_EFFECT, "print(file=...) is not replayed"),
        Reason(
            ReasonKind.DATA_DEPENDENT,
            "draw from Python's random module (randint) read by Python code",
            "f.py:3",
        ),
        Reason(ReasonKind.UNTRACKED_VALUE, "a tensor of unknown origin (shape (3,)) is used", "f.py:4"),
    ]
    fallback = combined(problems)
    assert fallback.kind is ReasonKind.DATA_DEPENDENT  # before side effects in PRECEDENCE
    assert fallback.where == "f.py:3"  # the first problem with a place
    assert fallback.message == "; ".join(p.message for p in problems)
    assert fallback.parts == tuple(problems)  # each problem keeps its own place
    assert combined(problems[:1]).parts == ()
    assert set(PRECEDENCE) == set(ReasonKind) == set(HINTS)


def _records_a_reason(call: ast.Call) -> str | None:
    """The name of what `call` records, when it records a reason: `x.problem(...)`, `Unsupported(...)`."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name if name in ("problem", "Unsupported") else None


def test_every_place_that_records_a_reason_states_its_kind() -> None:
    # The kind is decided where the problem is found (jitlab/jit/reasons.py), never read back from
    # the message: every `problem(message, kind)` and `Unsupported(message, kind)` of jitlab.jit
    # passes one (or both from a call, `problem(*training_problem(...))`), also on paths the tests
    # above do not reach, such as the internal errors.
    missing = []
    for path in sorted((ROOT / "jitlab" / "jit").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _records_a_reason(node):
                starred = any(isinstance(a, ast.Starred) for a in node.args)
                if len(node.args) + len(node.keywords) != 2 and not starred:
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not missing, "reasons recorded without a kind:\n" + "\n".join(missing)
    assert "other" not in {kind.value for kind in ReasonKind}  # no reason goes without a kind


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


# Programs that fall back to eager or are split by a graph break, each for a different kind of
# obstacle. Their kinds are stated where the problem is found and must reach `.explain()` unchanged.
HEAP: list[int] = []
SINK = io.StringIO()


def _draws(x: torch.Tensor) -> torch.Tensor:
    if random.randint(0, 1) == 1:  # Python reads the drawn int
        return x * 2
    return x


def _pushes(x: torch.Tensor) -> torch.Tensor:
    heapq.heappush(HEAP, len(HEAP))  # a native function changes an outside list
    return x + 1


def _prints_to_a_file(x: torch.Tensor) -> torch.Tensor:
    print("called", file=SINK)
    return x + 1


def _reseeds(x: torch.Tensor) -> torch.Tensor:
    torch.manual_seed(0)
    return x + torch.rand(1)


def _catches_an_index_error(x: torch.Tensor) -> torch.Tensor:
    try:
        return x[torch.tensor([5])]
    except IndexError:
        return x * 0


@pytest.mark.parametrize(
    ("program", "kind", "fragment"),
    [
        (_draws, ReasonKind.DATA_DEPENDENT, "random module (randint)"),
        (_pushes, ReasonKind.SIDE_EFFECT, "changed an outside list"),
        (_prints_to_a_file, ReasonKind.SIDE_EFFECT, "print(file=...) is not replayed"),
        (_reads_all_globals, ReasonKind.UNSUPPORTED_CODE, "globals() is not supported"),
        (_reseeds, ReasonKind.GLOBAL_STATE, "changes torch's global state"),
        (_catches_an_index_error, ReasonKind.USER_EXCEPTION, "raised IndexError"),
    ],
    ids=lambda value: getattr(value, "__name__", None) or str(value),
)
def test_fallbacks_of_real_programs_have_the_kind_their_cause_was_found_with(
    program: Any, kind: ReasonKind, fragment: str
) -> None:
    jitted = jit(program, backend="eager")
    for _ in range(2):
        jitted(torch.ones(3))
    report = jitted.explain()
    [reason] = [r for r in report.reasons if r.what == "fallback"]
    assert reason.kind is kind and fragment in reason.message, reason
    assert reason.message == report.fallbacks[0] == report.disabled
    assert list(report.by_kind()) == [kind]
    assert f"{kind.value} (1): {HINTS[kind]}" in str(report)


class _LargestByUserKey(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        parts = heapq.nlargest(2, [x, y, x - y], key=lambda t: float(t.abs().sum()))  # library callback
        return parts[0] * 2 + parts[1]


class _BackwardHooked(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)
        self.fc.register_full_backward_hook(lambda module, grad_in, grad_out: None)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.fc(x) + y  # the hooked module is called natively between two graphs


class _DropoutDecides(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = torch.nn.functional.dropout(x, 0.5, training=True)
        y.mul_(2)
        if z.sum() > 0:  # decided on random values of a graph that mutates: a data break
            return z
        return -z


@pytest.mark.parametrize(
    ("program", "kind", "fragment"),
    [
        (_program, ReasonKind.UNSUPPORTED_CODE, "_with_class_pattern cannot be interpreted"),
        (_LargestByUserKey(), ReasonKind.LIBRARY_CALLBACK, "library function nlargest calls user code back"),
        (_BackwardHooked(), ReasonKind.NATIVE_CALL, "the module is called natively"),
        (_DropoutDecides(), ReasonKind.DATA_DEPENDENT, "Python decides on tensor data"),
    ],
    ids=["unsupported-code", "library-callback", "native-call", "data-dependent"],
)
def test_graph_breaks_of_real_programs_have_the_kind_their_cause_was_found_with(
    program: Any, kind: ReasonKind, fragment: str
) -> None:
    jitted = jit(program, backend="eager")
    for n in range(2):
        x = torch.randn(3, generator=torch.Generator().manual_seed(n))
        args = (x,) if program is _program else (x, torch.ones(3))
        jitted(*args)
    report = jitted.explain()
    assert not report.fallbacks, str(report)
    [brk] = report.graph_breaks
    assert brk.reason_kind is kind and fragment in brk.reason, brk
    [reason] = [r for r in report.reasons if r.what == "graph break"]
    assert (reason.kind, reason.message) == (kind, brk.reason)
    assert list(report.by_kind()) == [kind]
