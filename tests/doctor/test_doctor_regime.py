"""The regime diagnosis: known programs land in the right regime, confirmed by the scaling check.

The programs are timed for real, but the roofline uses fixed peaks of a typical CPU (20 GB/s,
200 GFLOP/s): whether an operator is compute- or bandwidth-bound is the ratio of its work to the
peaks, and the quick probes of a test session, run beside other busy processes, can distort that
ratio far enough to turn a chain of multiplications compute-bound. The probes themselves are tested
in tests/machine.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from doctor_helpers import program

from jitlab.doctor import diagnose
from jitlab.doctor.regime import _peaks_owner
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


def test_the_efficiency_names_whose_peaks_it_used(regimes):
    """On a CPU the machine's; on CUDA the GPU's only where that GPU's peaks were measured (on an
    H100 whose GPU probe had failed, the report said "of the GPU's peaks" for the host's)."""
    assert regimes("matrix_product", "matmul_inputs").peaks_owner == "the machine's"
    measured = replace(TYPICAL_CPU, gpus=[{"index": 0, "name": "a GPU"}])
    assert _peaks_owner({"cpu", "cuda:0"}, measured) == "the GPU's"
    assert _peaks_owner({"cuda:1"}, measured) == "the host's"
    assert _peaks_owner({"cuda:0"}, TYPICAL_CPU) == "the host's"
    assert _peaks_owner({"cpu"}, measured) == "the machine's"
