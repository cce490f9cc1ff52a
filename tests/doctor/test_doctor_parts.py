"""The doctor's parts on their own: findings aggregate, registries refuse duplicates, loops are
found in the syntax tree, the regime's arithmetic splits time as documented."""

from __future__ import annotations

import sys

import pytest
from doctor_helpers import line_of, program

from jitlab.doctor import Finding, register_check
from jitlab.doctor.findings import FindingSet
from jitlab.doctor.location import in_loop, loop_header
from jitlab.doctor.regime import Work, shares_from
from jitlab.doctor.registry import all_checks
from jitlab.doctor.target import resolve_target
from jitlab.errors import UserError

MISC = program("misc.py")


def test_findings_at_one_place_aggregate_with_a_count():
    found = FindingSet()
    for _ in range(3):
        found.add(Finding("sync", "a.py:3", "x", "y"))
    found.add(Finding("graph-break", "a.py:3", "x", "y"))
    found.add(Finding("sync", "a.py:4", "x", "y"))
    assert [(f.kind, f.location, f.count) for f in found.sorted()] == [
        ("sync", "a.py:3", 3),
        ("sync", "a.py:4", 1),
        ("graph-break", "a.py:3", 1),
    ]
    with pytest.raises(ValueError):
        found.add(Finding("nonsense", "a.py:1", "x", "y"))


def test_check_registry_refuses_a_second_check_under_a_name():
    import jitlab.doctor.jit_view  # noqa: F401 -- imported before the others: the order stays

    assert list(all_checks())[:4] == ["sync", "loops", "graph", "jit"]
    with pytest.raises(ValueError, match="registered already"):
        register_check("sync")(lambda ctx: [])


def test_loops_from_the_syntax_tree():
    item = line_of(MISC, "item")
    assert in_loop(MISC, item) and loop_header(MISC, item) == item - 1
    assert not in_loop(MISC, line_of(MISC, "bool"))
    assert not in_loop(MISC, line_of(MISC, "raise"))


def test_target_resolution_by_module_name(monkeypatch):
    monkeypatch.syspath_prepend(str(program("")))
    target = resolve_target("misc:vector")
    assert target.function.__name__ == "vector" and target.file.endswith("misc.py")
    with pytest.raises(UserError, match="names no function"):
        resolve_target("misc")
    sys.modules.pop("misc", None)


def _work(compute_s: float, bandwidth_s: float, ops: int = 1) -> Work:
    return Work(ops=ops, compute_s=compute_s, bandwidth_s=bandwidth_s)


def test_shares_when_time_grows_with_the_work():
    # device work of 1 s at the peaks measured as 2 s, doubled work 4 s: all device time, k = 2
    shares, efficiency, _ = shares_from(2.0, 4.0, _work(0.25, 0.75), _work(0.5, 1.5), 0.0)
    assert shares == pytest.approx({"overhead": 0.0, "bandwidth": 0.75, "compute": 0.25})
    assert efficiency == pytest.approx(0.5)


def test_shares_when_time_does_not_grow():
    # 1 ms of counted work at the peaks in a call of 10 ms whose time stays flat at twice the work
    shares, _, _ = shares_from(0.010, 0.010, _work(0.0, 0.001), _work(0.0, 0.002), 0.0)
    assert shares == pytest.approx({"overhead": 0.9, "bandwidth": 0.1, "compute": 0.0})


def test_shares_without_a_scaling_check_assume_the_peaks():
    shares, efficiency, how = shares_from(0.004, None, _work(0.001, 0.001), None, 0.0)
    assert shares == pytest.approx({"overhead": 0.5, "bandwidth": 0.25, "compute": 0.25})
    assert efficiency is None and "no usable scaling" in how


def test_inputs_without_scale_are_doubled_along_dimension_0():
    import torch

    from jitlab.doctor.target import Inputs

    scaled, how = Inputs((torch.ones(4, 3), 5), {"w": torch.zeros(2)}).scaled(2)
    assert scaled.args[0].shape == (8, 3) and scaled.args[1] == 5 and scaled.kwargs["w"].shape == (4,)
    assert "dimension 0" in how


def test_scaling_unavailable_when_doubled_inputs_fail(peaks):
    from jitlab.doctor import diagnose

    regime = diagnose(
        f"{program('regimes.py')}:matrix_product", f"{MISC}:two_squares", checks=["regime"], peaks=peaks
    ).regime
    assert regime.scaling["time_ratio"] is None and regime.scaling["confirms"] is None
    assert "RuntimeError" in regime.scaling["inputs"] and "scale" in regime.scaling["inputs"]
    assert "no usable scaling" in regime.scaling["method"]
    assert regime.flops == 2 * 8**3


def test_regime_advice_fits_the_operators_that_take_the_time():
    from jitlab.doctor.advice import DATA_MOVEMENT, ELEMENTWISE, suggestion

    sampler = {
        "nonzero": {"calls": 2, "flops": 0.0, "bytes": 200e3, "family": DATA_MOVEMENT},
        "index": {"calls": 2, "flops": 0.0, "bytes": 192e3, "family": DATA_MOVEMENT},
        "bitwise_not": {"calls": 1, "flops": 2e4, "bytes": 40e3, "family": ELEMENTWISE},
    }
    advice = suggestion("bandwidth", sampler)
    assert "fuse element-wise" not in advice and "nonzero x2, index x2" in advice
    chain = {"mul": {"calls": 16, "flops": 1.6e7, "bytes": 1.3e8, "family": ELEMENTWISE}}
    assert "fuse them" in suggestion("bandwidth", chain) and "mul x16" in suggestion("bandwidth", chain)


def test_operator_families_come_from_torch_tags():
    import torch

    from jitlab.doctor.advice import CONTRACTION, DATA_MOVEMENT, ELEMENTWISE, REDUCTION, family

    ops = torch.ops.aten
    assert family(ops.mul.Tensor) == ELEMENTWISE and family(ops.sum.default) == REDUCTION
    assert family(ops.mm.default) == CONTRACTION and family(ops.nonzero.default) == DATA_MOVEMENT
    assert family(ops.randperm.default) == DATA_MOVEMENT


def test_graphs_compiled_with_no_failed_guard_are_not_called_recompiles():
    from jitlab.doctor.graph_breaks import _recompile_finding

    class Ctx:
        class target:  # noqa: N801 - stands for a Target
            spec = "f.py:f"
            function = test_graphs_compiled_with_no_failed_guard_are_not_called_recompiles

    found = _recompile_finding("same inputs again", 1, [], Ctx())
    assert "no failed guard" in found.detail and "recompiled" not in found.detail
    assert "guards failed" not in found.detail
    assert "guards failed: x" in _recompile_finding("same inputs again", 2, ["x"], Ctx()).detail
