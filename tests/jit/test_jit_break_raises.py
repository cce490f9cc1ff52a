"""A call break whose call raises while capturing, and the program catches the exception.

Before, the capture fell back to eager for good ("the call ... raised ValueError while capturing").
Now the entry expects the call to raise again: the exception is the break's result, guarded by its
type (and by what the program reads of it, such as its message), and the graph after the break is
the handler's path. A call that returns instead, or raises something the guards do not accept,
deoptimises: the rest of the call runs from the break with the interpreter, as eager code would.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from jitlab.jit import jit

EVENTS: list = []


@torch.compiler.disable  # runs eagerly: a graph break
def checked_sqrt(t):
    if (t < 0).any():
        raise ValueError(f"negative input at {int((t < 0).nonzero()[0, 0])}")
    if t.sum() > 100:
        raise TypeError("too large")
    return t.sqrt()


class FallbackOnError(nn.Module):
    def forward(self, x):
        y = x * 2
        try:
            z = checked_sqrt(y)
        except ValueError:
            z = y.abs().sqrt().neg()
        return z + 1


class RecordsTheMessage(nn.Module):
    def forward(self, x):
        y = x * 2
        try:
            z = checked_sqrt(y)
        except Exception as exc:
            EVENTS.append(f"{type(exc).__name__}: {exc}")
            z = y.abs()
        return z - 1


class LetsItEscape(nn.Module):
    def forward(self, x):
        return checked_sqrt(x * 2) + 1


VALUES = [
    [-1.0, 2.0, 3.0],
    [-2.0, 1.0, 1.0],
    [1.0, 2.0, 3.0],
    [2.0, -0.5, 0.5],
    [-4.0, 4.0, 1.0],
    [60.0, 1.0, 1.0],
]


def _compare(model, values):
    jitted = jit(model, backend="eager")
    for v in values:
        x = torch.tensor(v)
        outcomes = []
        for runner in (model, jitted):
            EVENTS.clear()
            try:
                out = ("returned", runner(x.clone()))
            except Exception as exc:
                out = ("raised", type(exc), str(exc))
            outcomes.append((out, list(EVENTS)))
        (eager, eager_events), (got, got_events) = outcomes
        assert eager[0] == got[0] and eager_events == got_events, (v, eager, got)
        if eager[0] == "returned":
            assert torch.equal(eager[1], got[1]), v
        else:
            assert eager == got
    return jitted.explain()


def test_a_caught_exception_from_a_break_is_served_by_graphs():
    values = [[-1.0, 2.0, 3.0], [-2.0, 1.0, 1.0], [-1.0, 0.5, 0.5], [1.0, 2.0, 3.0]]
    report = _compare(FallbackOnError(), values)
    assert not report.fallbacks, str(report)
    assert report.graph_count == 1 and report.graphs[0].hits == 2, str(report)
    guards = report.graphs[0].guards
    assert any("type(b0) is ValueError" in g for g in guards), str(report)
    assert any("b0.args[0] == 'negative input at 0'" in g for g in guards), str(report)
    assert report.deopts == 1, str(report)  # the call that did not raise resumed from the break


@pytest.mark.parametrize("model", [FallbackOnError, RecordsTheMessage, LetsItEscape])
def test_results_messages_and_escaping_exceptions_equal_eager(model):
    with torch.no_grad():
        _compare(model(), VALUES)


EMPTY: dict = {}


def after_a_handled_key_error(x):
    try:
        scale = EMPTY["missing"]
    except KeyError:
        scale = 0.5
    y = x * scale
    try:
        y = checked_sqrt(y)
    except ValueError as exc:
        EVENTS.append(str(exc))
        y = y - 1.0
    return y * 3


def test_a_break_after_an_exception_handled_earlier_in_the_frame():
    """The frame kept the last exception raised in it (for its traceback line), which made every
    later place in the frame no break: the whole call fell back."""
    report = _compare(after_a_handled_key_error, [[-1.0, 2.0], [-1.0, 2.0], [1.0, 2.0], [-1.0, 3.0]])
    assert not report.fallbacks, str(report)
    assert report.graphs[0].hits == 2 and report.deopts == 1, str(report)
