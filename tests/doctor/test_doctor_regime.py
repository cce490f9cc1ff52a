"""The regime diagnosis: known programs land in the right regime, confirmed by the scaling check.

The programs are timed for real, but the roofline uses fixed peaks of a typical CPU (20 GB/s,
200 GFLOP/s): whether an operator is compute- or bandwidth-bound is the ratio of its work to the
peaks, and the quick probes of a test session, run beside other busy processes, can distort that
ratio far enough to turn a chain of multiplications compute-bound. The probes themselves are tested
in tests/machine.
"""

from __future__ import annotations

import pytest
from doctor_helpers import program

from jitlab.doctor import diagnose
from jitlab.machine.peaks import MachinePeaks

REGIMES = program("regimes.py")
TYPICAL_CPU = MachinePeaks(
    bandwidth_bytes_per_s=2e10,
    flops_f32=2e11,
    flops_f64=1e11,
    overhead_s={"torch": 5e-6},
    measured_at="fixed peaks of a typical CPU (the regime tests)",
)


@pytest.fixture(scope="module")
def regimes():
    """Each program's regime, diagnosed once for the whole module."""
    found = {}
    peaks = TYPICAL_CPU

    def regime(function: str, inputs: str):
        if function not in found:
            found[function] = diagnose(f"{REGIMES}:{function}", inputs, checks=["regime"], peaks=peaks).regime
        return found[function]

    return regime


@pytest.mark.parametrize(
    ("function", "inputs", "verdict", "advice"),
    [
        ("multiply_chain", "chain_inputs", "bandwidth", "fuse"),
        ("tiny_additions", "tiny_inputs", "overhead", "compile"),
        ("matrix_product", "matmul_inputs", "compute", "precision"),
    ],
)
def test_verdict(regimes, function, inputs, verdict, advice):
    regime = regimes(function, inputs)
    assert regime.verdict == verdict
    assert sum(regime.shares.values()) == pytest.approx(1.0)
    assert regime.shares[verdict] > 0.5
    assert regime.scaling["confirms"] is True
    assert regime.scaling["work_ratio"] == pytest.approx(2.0, rel=0.05)
    assert advice in regime.suggestion


def test_counted_work_of_the_matrix_product(regimes):
    regime = regimes("matrix_product", "matmul_inputs")
    n = 1024
    assert regime.ops == 1
    assert regime.flops == 2 * n**3
    assert regime.bytes == 3 * n * n * 4  # two inputs read, one output written, float32


def test_counted_work_of_the_multiply_chain(regimes):
    regime = regimes("multiply_chain", "chain_inputs")
    n = 8_000_000
    assert regime.ops == 4
    assert regime.flops == 4 * n  # one multiplication per element and operation
    assert regime.bytes == 4 * 2 * n * 4  # each reads and writes the float32 tensor


def test_counted_work_of_the_tiny_additions(regimes):
    regime = regimes("tiny_additions", "tiny_inputs")
    assert (regime.ops, regime.flops, regime.bytes) == (2000, 2000, 2000 * 8)
