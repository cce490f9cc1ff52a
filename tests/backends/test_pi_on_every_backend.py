"""Every backend runs the pi workload in its own worker process, synchronised, with a sound error."""

import math
import os

import pytest

from jitlab.backends import all_backends, backend_names, get_backend
from jitlab.engine.runner import execute_cell, probe_backend
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.store.cell_rows import cell_from_result
from jitlab.workloads.pi import pi

ALL = ["python", "numpy", "numba", "numba-parallel", "jax", "tensorflow", "torch", "torch-compile", "triton"]


def test_the_nine_backends_are_registered_and_pi_implements_them_all():
    assert backend_names() == ALL
    assert sorted(pi.implementations) == sorted(ALL)


@pytest.mark.parametrize("name", ALL)
def test_backend_is_installed_in_ci(name):
    backend = get_backend(name)
    if os.environ.get("CI") == "true":
        assert backend.is_available(), f"{name} must be installed in CI: {backend.install_hint}"
    elif not backend.is_available():
        pytest.skip(f"{name} not installed here: {backend.install_hint}")
    assert backend.version()


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_pi_cell_measures_and_is_statistically_sound(name):
    n = 20_000
    spec = CellSpec("pi", name, n, threads=2, policy=TimingPolicy(budget_s=0.5, min_samples=3))
    result = execute_cell(spec, timeout_s=300)
    assert result.status == "ok", result.reason
    cell = cell_from_result(1, "pi", name, n, {}, result)
    assert cell.first_call_s > 0
    assert cell.summary.count >= 1 and cell.summary.median > 0
    assert len(cell.values) >= 2
    sigma = math.sqrt(math.pi * (4 - math.pi) / n)
    assert cell.expected_error == pytest.approx(sigma)
    for value in cell.values:
        assert abs(value - math.pi) < 6 * sigma, f"{name} estimate {value} is not pi within sampling error"
    # different seeds draw different points
    assert len(set(cell.values)) > 1
    # the source document's score is kept as an extra column
    assert 0.9 < cell.extra("accuracy score") <= 1.0
    assert cell.peak_rss_bytes > 10 * 2**20
    assert cell.threads == 2
    if get_backend(name).asynchronous:
        assert cell.dispatch_s is not None and cell.dispatch_s > 0
    else:
        assert cell.dispatch_s is None


def test_results_are_reproducible_per_seed():
    spec = CellSpec("pi", "numpy", 5000, policy=TimingPolicy(budget_s=0.05, min_samples=1))
    first = execute_cell(spec, 120).values
    second = execute_cell(spec, 120).values
    assert first == second


@pytest.mark.parametrize("backend", all_backends(), ids=lambda b: b.name)
def test_probe_reports_version_and_devices(backend):
    probe = probe_backend(backend.name)
    assert probe["status"] == "ok", probe.get("reason")
    assert probe["version"]
    assert probe["devices"] and any(
        "cpu" in d.lower() or "cuda" in d.lower() or "gpu" in d.lower() for d in probe["devices"]
    )
