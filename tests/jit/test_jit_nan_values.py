"""A NaN read from tensor data by Python.

A speculation re-checks the value read (`float(t)`, `.item()`, `tolist()`) with `!=`, and a NaN
never equals itself: a call that read one fell back to eager for good ("returned a value that cannot
be compared"), though a NaN check is the most common reason to read a loss (`math.isnan(loss)`). A
NaN is now compared by its eight bytes, so the sign bit, which `math.copysign` reads, counts too.
"""

from __future__ import annotations

import math

import torch

from jitlab.jit import jit

NAN = float("nan")


def skip_on_nan(x):
    value = float(x.sum())
    if math.isnan(value):
        return x * 0 - 1
    return x * value


def sign_of_first(x):
    return x * 0 + math.copysign(1.0, float(x[0]))


def _bits(t: torch.Tensor) -> list[int]:
    return t.view(torch.int32).tolist()


def _check(fn, inputs):
    jitted = jit(fn, backend="eager")
    for x in inputs:
        assert _bits(jitted(x.clone())) == _bits(fn(x.clone())), x
    return jitted.explain()


def test_a_nan_read_by_python_is_cached_and_rechecked():
    inputs = [
        torch.tensor([1.0, NAN]),
        torch.tensor([2.0, NAN]),
        torch.tensor([1.0, 2.0]),
        torch.tensor([3.0, NAN]),
    ]
    report = _check(skip_on_nan, inputs)
    assert not report.fallbacks, str(report)
    assert report.graph_count == 2 and sum(g.hits for g in report.graphs) == 2, str(report)
    assert any("== nan" in s for g in report.graphs for s in g.speculations), str(report)


def test_the_sign_of_a_nan_is_part_of_the_check():
    negative = -NAN  # the same NaN with its sign bit set: math.copysign(1.0, it) is -1.0
    assert math.copysign(1.0, negative) == -1.0
    inputs = [torch.tensor([NAN, 1.0]), torch.tensor([negative, 1.0]), torch.tensor([NAN, 2.0])]
    report = _check(sign_of_first, inputs)
    assert not report.fallbacks, str(report)
    assert report.graph_count == 2, str(report)


def test_a_list_with_a_nan_from_tolist():
    def count_finite(x):
        return x + sum(1 for v in x.tolist() if v == v)

    report = _check(
        count_finite, [torch.tensor([1.0, NAN]), torch.tensor([1.0, NAN]), torch.tensor([1.0, 2.0])]
    )
    assert not report.fallbacks, str(report)
