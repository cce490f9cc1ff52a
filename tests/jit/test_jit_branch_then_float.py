"""A Python branch on tensor data together with a float read from tensor data (`float(t)`,
`t.item()`) that only flows into tensor operations.

With backend "eager" the float stays a graph value (recorder.py: lazy floats) whatever the branch
before or after it does: the branch is a speculation on its outcome only, so the program takes one
capture per outcome (then the two entries merge, branches.py) and every later call is a hit, equal to
eager code. With a compiling backend every value read from tensor data is a speculation from the
start (docs/jit.md, data-dependent behaviour), so a float that changes on every call recaptures until
the cache limit and the later calls run eagerly: equal to eager code, with the reason in explain().
Every test compares with eager code on inputs whose branch outcome and float both change.
"""

from __future__ import annotations

import math

import pytest
import torch
from jit_helpers import check_program

CALLS = 20


def inputs(calls: int = CALLS, rows: int = 3):
    # seeds 0..19: the sign of the sum flips (calls 0 and 1 take one side, call 2 the other) and the
    # max differs on every call
    return [((torch.randn(rows, 4, generator=torch.Generator().manual_seed(s)),), {}) for s in range(calls)]


def branch_then_float(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    m = torch.tensor(float(y.max()))
    return torch.tanh(y) * m


def branch_then_item(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    m = torch.tensor(y.max().item())
    return torch.tanh(y) * m


def branch_then_arithmetic(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    f = float(y.max()) * 0.5 + 1.0
    return torch.tanh(y) * torch.tensor(f) + math.sqrt(abs(f))


def float_then_branch(x):
    y = x * 2
    m = torch.tensor(float(y.max()))
    if y.sum() > 0:
        y = y + 1
    return torch.tanh(y) * m


def branch_on_item_then_float(x):
    y = x * 2
    if y.sum().item() > 0:
        y = y + 1
    return torch.tanh(y) * float(y.max())


def only_the_branch(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    return torch.tanh(y)


PROGRAMS = [
    branch_then_float,
    branch_then_item,
    branch_then_arithmetic,
    float_then_branch,
    branch_on_item_then_float,
]


# calls 0 and 2 are captured; every call from 3 on is a hit (call 1's hit on the first entry is not
# counted once the two entries are merged into one graph)
SERVED = CALLS - 3


def counts(jitted):
    report = jitted.explain()
    return report, sum(g.hits for g in report.graphs)


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_float_read_beside_a_branch_stays_a_graph_value(program):
    outcomes = {bool(args[0].mul(2).sum() > 0) for args, _ in inputs()}
    assert outcomes == {True, False}  # the inputs take both sides of the branch
    jitted = check_program(lambda: program, inputs())
    report, hits = counts(jitted)
    assert report.captures <= 2, str(report)  # one per side of the branch, never one per float value
    assert report.eager_misses == 0 and report.fallback_reasons == () and report.deopts == 0, str(report)
    assert hits >= SERVED, str(report)
    for graph in report.graphs:  # only the branch is re-checked, never the float's value
        assert not any("__float__" in s or "item(...) ==" in s for s in graph.speculations), (
            graph.speculations
        )


def test_a_float_read_beside_a_branch_on_changing_sizes():
    calls = [
        ((torch.randn(2 + s % 3, 4, generator=torch.Generator().manual_seed(s)),), {}) for s in range(24)
    ]
    jitted = check_program(lambda: branch_then_float, calls)
    report, hits = counts(jitted)
    assert report.eager_misses == 0 and report.fallback_reasons == (), str(report)
    assert report.captures <= 4 and hits == len(calls) - report.captures, str(report)


@pytest.mark.parametrize("program", [branch_then_float, branch_then_item, float_then_branch])
def test_with_a_compiling_backend_the_float_is_a_speculation_and_results_stay_eager(program):
    jitted = check_program(lambda: program, inputs(), backend="aot_eager")
    report = jitted.explain()
    assert report.captures <= 8 and report.fallback_reasons == (), str(report)  # the cache limit
    # the calls that ran eagerly say why: the float read from tensor data differed
    assert report.last_misses and any(
        "__float__(...) ==" in miss or "item(...) ==" in miss for miss in report.last_misses[-1]
    ), report.last_misses


def test_with_a_compiling_backend_the_branch_alone_takes_two_captures():
    jitted = check_program(lambda: only_the_branch, inputs(), backend="aot_eager")
    report, hits = counts(jitted)
    assert report.captures == 2 and report.eager_misses == 0 and hits >= SERVED, str(report)
