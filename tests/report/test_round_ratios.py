"""Ratios between two cells of one run come from the same rounds, so the machine's drift between
rounds cancels; cells measured without rounds keep the ratio of their medians."""

from __future__ import annotations

import numpy as np
import pytest

from jitlab.report.fastest import fastest_cells, fastest_lines
from jitlab.report.round_ratios import round_medians, round_ratio
from jitlab.store import CellRecord

#: the machine's speed in rounds 0, 1, 2: 1.7x apart, as on a drifting shared VM
DRIFT = (1.0, 1.7, 1.2)


def cell(backend: str, per_call: float, rounds: bool = True, seed: int = 0) -> CellRecord:
    """A cell measured in three processes, process k in round k at the machine's speed then."""
    rng = np.random.default_rng(seed)
    samples, index, details = [], [], []
    for k, speed in enumerate(DRIFT):
        samples += list(per_call * speed * rng.lognormal(0, 0.005, 20))
        index += [k] * 20
        details.append({"process": k, "status": "ok", "round": k if rounds else None})
    return CellRecord(
        1,
        "w",
        backend,
        10,
        {},
        "ok",
        None,
        samples_s=tuple(samples),
        sample_process=tuple(index),
        process_details=tuple(details),
    )


def test_per_round_ratio_takes_the_drift_out():
    slow, fast = cell("numpy", 1.0, seed=1), cell("jax", 0.5, seed=2)
    found = round_ratio(slow, fast)
    assert found.method == "per-round" and found.rounds == 3
    assert found.ratio == pytest.approx(2.0, rel=0.01)
    assert 1.9 < found.ci_low < 2.0 < found.ci_high < 2.1
    # each cell's own interval carries the drift: wider than the ratio's by far
    assert slow.summary.ci_half_width > 0.2


def test_a_5_percent_difference_is_resolved_per_round_but_not_by_the_cells_intervals():
    a, b = cell("numpy", 1.0, seed=3), cell("jax", 1 / 1.05, seed=4)
    (f,) = fastest_cells("w", [a, b])
    assert f.cell.backend == "jax" and not f.tied
    assert f.round_ratio.ci_low > 1.0
    assert a.summary.ci_low <= b.summary.ci_high  # the cells' intervals overlap
    line = fastest_lines([f])[0]
    assert "1.05× [" in line and "faster than numpy" in line


def test_equal_cells_are_tied_per_round():
    a, b = cell("numpy", 1.0, seed=5), cell("jax", 1.0, seed=6)
    (f,) = fastest_cells("w", [a, b])
    assert len(f.tied) == 1
    assert f.round_ratio.ci_low <= 1.0 <= f.round_ratio.ci_high


def test_cells_without_rounds_keep_the_ratio_of_medians():
    a, b = cell("numpy", 1.0, rounds=False, seed=7), cell("jax", 0.5, rounds=False, seed=8)
    assert round_medians(a) == {}
    found = round_ratio(a, b)
    assert found.method == "medians" and found.ci_low is None
    assert found.ratio == pytest.approx(a.summary.median / b.summary.median)
    assert fastest_cells("w", [a, b])[0].to_json()["ratio_method"] == "medians"


def test_a_process_measured_again_after_the_rounds_pairs_with_no_round():
    """A slow spell's process measured again once the machine is quiet is recorded with round
    "again" (engine/slow_spells.py); the closing lines of `jitlab run` raised on it (exit 3)."""
    base = cell("numpy", 1.0, seed=3)
    rng = np.random.default_rng(4)
    again = list(rng.lognormal(0, 0.005, 20))
    replaced = base.process_details[:2] + (
        {"process": 2, "status": "ok", "round": 2, "replaced_by": 3},
        {"process": 3, "status": "ok", "round": "again"},
    )
    samples = base.samples_s[:40] + tuple(again)
    index = base.sample_process[:40] + (3,) * 20
    measured_again = CellRecord(
        1, "w", "numpy", 10, {}, "ok", None, samples_s=samples, sample_process=index,
        process_details=replaced,
    )  # fmt: skip
    assert set(round_medians(measured_again)) == {0, 1}
    ratio = round_ratio(measured_again, cell("jax", 0.5, seed=5))
    assert ratio.method == "per-round" and ratio.rounds == 2
    assert ratio.ratio == pytest.approx(2.0, rel=0.05)
