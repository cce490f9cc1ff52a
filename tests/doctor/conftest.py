"""Fixtures for the doctor's tests: the fixture programs and this machine's peaks.

The peaks are measured once per test session with the machine probes' quick sizes (bandwidth,
FLOP/s, torch's per-call overhead; about 20 s) and saved in a temporary cache that the command-line
tests find through $JITLAB_STORE, so no test depends on a cache left by an earlier run.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def peaks_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from jitlab.machine.measure import run_probe
    from jitlab.machine.peaks import MachinePeaks, save_peaks
    from jitlab.store.machine import machine_info

    results = {name: run_probe(name, quick=True) for name in ("bandwidth", "flops", "overhead:torch")}
    for name, result in results.items():
        assert result.get("status") == "ok", f"probe {name} failed: {result}"
    peaks = MachinePeaks(
        bandwidth_bytes_per_s=results["bandwidth"]["bandwidth_bytes_per_s"],
        flops_f32=results["flops"]["flops_f32"],
        flops_f64=results["flops"]["flops_f64"],
        overhead_s={"torch": results["overhead:torch"]["seconds_per_call"]},
        machine=machine_info(),
        measured_at="test session (quick probes)",
        # on a GPU machine, `load_peaks()` would otherwise measure the GPU peaks for each CLI test
        details={"gpu_failure": "not measured by the test session (quick host probes only)"},
    )
    folder = tmp_path_factory.mktemp("peaks")
    save_peaks(peaks, folder / "machine.json")
    return folder


@pytest.fixture(scope="session")
def peaks(peaks_cache: Path):
    from jitlab.machine.peaks import cached_peaks

    found = cached_peaks(peaks_cache / "machine.json")
    assert found is not None
    return found


@pytest.fixture
def peaks_env(peaks_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$JITLAB_STORE in the folder of the session's peaks, so `load_peaks()` finds them."""
    monkeypatch.setenv("JITLAB_STORE", str(peaks_cache / "results.sqlite"))
    return peaks_cache
