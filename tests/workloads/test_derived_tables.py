"""Speed-ups against a declared baseline and the flat region of a parameter sweep, from records."""

from __future__ import annotations

import pytest

from jitlab.report.speedup import speedups
from jitlab.report.throughput import flat_up_to, rates
from jitlab.store import CellRecord
from jitlab.workloads.fusion import throughput
from jitlab.workloads.sampler import baseline


def cell(backend: str, size: int, params: dict, median: float) -> CellRecord:
    return CellRecord(
        run_id=1,
        workload="w",
        backend=backend,
        size=size,
        params=params,
        status="ok",
        reason=None,
        samples_s=(median,) * 7,
    )


def test_sampler_speedups_pair_single_and_batched_variants_with_their_baselines():
    cells = [
        cell("torch", 1000, {"variant": "naive"}, 4.0),
        cell("torch", 1000, {"variant": "static"}, 2.0),
        cell("torch-compile", 1000, {"variant": "static"}, 1.0),
        cell("torch", 1000, {"variant": "batched-naive"}, 30.0),
        cell("torch-compile", 1000, {"variant": "batched-static"}, 3.0),
        cell("torch", 10, {"variant": "static"}, 1.0),  # no baseline at this size: left out
    ]
    found = {(s.cell.backend, s.cell.params["variant"]): s for s in speedups(cells, baseline)}
    assert set(found) == {
        ("torch", "naive"),
        ("torch", "static"),
        ("torch-compile", "static"),
        ("torch", "batched-naive"),
        ("torch-compile", "batched-static"),
    }
    assert found[("torch", "naive")].is_baseline
    assert found[("torch", "static")].ratio == pytest.approx(2.0)
    assert found[("torch-compile", "static")].ratio == pytest.approx(4.0)
    assert found[("torch-compile", "batched-static")].ratio == pytest.approx(10.0)


def test_flat_region_and_rates():
    medians = {1: 1.0, 2: 1.05, 4: 1.1, 8: 1.2, 16: 1.6, 32: 1.1}
    cells = [cell("jax", 10**6, {"k": k}, m) for k, m in medians.items()]
    assert flat_up_to(cells, "k") == {"jax n=1e6": 8}  # stops at the first step out of the band
    r = rates(cells[0], throughput)
    assert r["bytes_per_s"] == pytest.approx(8e6) and r["flops_per_s"] == pytest.approx(1e6)
