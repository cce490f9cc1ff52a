"""Machine peaks: the probes compute what they claim, the cache round trip is keyed by the machine
fingerprint, and `jitlab machine --json` has the documented shape (quick mode: tiny sizes)."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from jitlab.machine.peaks import MachinePeaks, cached_peaks, load_peaks, save_peaks
from jitlab.machine.probes import (
    probe_bandwidth,
    probe_flops,
    probe_overhead,
    probe_random,
    splitmix64_reference,
)
from jitlab.store.machine import machine_fingerprint, machine_info


def _peaks(info: dict, bandwidth: float = 1e10) -> MachinePeaks:
    return MachinePeaks(
        bandwidth_bytes_per_s=bandwidth,
        flops_f32=4e10,
        flops_f64=2e10,
        overhead_s={"python": 5e-8, "torch": 1e-6},
        machine=info,
        measured_at="2026-01-01T00:00:00+00:00",
        # without the reason, a machine with GPUs measures again (load_peaks: missing GPU peaks)
        details={"quick": False, "gpu_failure": "this test's figures hold no GPU peaks"},
    )


def test_cache_round_trip_is_keyed_by_machine(tmp_path):
    cache = tmp_path / "machine.json"
    info = machine_info()
    other = {**info, "name": "another-machine"}
    save_peaks(_peaks(other, bandwidth=1.0), cache)
    assert cached_peaks(cache, info) is None  # another machine's figures are not ours
    ours = _peaks(info)
    save_peaks(ours, cache)
    assert cached_peaks(cache, info) == ours
    assert cached_peaks(cache, other).bandwidth_bytes_per_s == 1.0  # both entries kept
    stored = json.loads(cache.read_text())
    assert set(stored["machines"]) == {machine_fingerprint(info), machine_fingerprint(other)}
    # load_peaks reads the cache instead of measuring (the sentinel date proves it came from there)
    assert load_peaks(cache_path=cache) == ours
    assert ours.ridge_flops_per_byte("float32") == pytest.approx(4.0)
    assert ours.flops("float64") == 2e10


def test_damaged_cache_counts_as_missing(tmp_path):
    cache = tmp_path / "machine.json"
    cache.write_text("{not json")
    assert cached_peaks(cache) is None
    save_peaks(_peaks(machine_info()), cache)  # rewritten, not trusted
    assert cached_peaks(cache) is not None


def test_probes_measure_positive_rates_and_check_their_result():
    bandwidth = probe_bandwidth(quick=True)
    assert bandwidth["bandwidth_bytes_per_s"] > 0
    assert bandwidth["bytes_per_pass"] == 24 * bandwidth["elements"]
    flops = probe_flops(quick=True)
    assert flops["flops_f32"] > 0 and flops["flops_f64"] > 0
    assert set(flops["by_library"]["float32"]) == {"numpy", "torch"}
    assert probe_overhead("python", quick=True)["seconds_per_call"] > 0
    with pytest.raises(ValueError, match="unknown framework"):
        probe_overhead("fortran", quick=True)


def test_random_probe_checks_its_generator_and_rates_one_and_all_threads():
    import numba

    # SplitMix64 seeded with 1234567 gives 6457827717110365317 first (its published test vector);
    # the probe's word i is the generator's output i from state `key`
    assert splitmix64_reference(1234567, 0) == 6457827717110365317
    found = probe_random(quick=True)
    assert set(found["words_per_s"]) == {"1", str(numba.get_num_threads())}
    assert all(rate > 0 for rate in found["words_per_s"].values())


def test_machine_command_json_and_cache(jitlab_cli, tmp_path):
    cache = tmp_path / "peaks.json"
    first = jitlab_cli("machine", "--quick", "--cache", str(cache), "--json")
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["measured_now"] is True and data["cache_path"] == str(cache)
    for key in ("bandwidth_bytes_per_s", "flops_f32", "flops_f64"):
        assert isinstance(data[key], float) and data[key] > 0
    # every framework installed here; CI installs them all (a GPU image may lack TensorFlow)
    frameworks = ("torch", "jax", "tensorflow", "numba")
    installed = {"python", "numpy"} | {
        name for name in frameworks if os.environ.get("CI") == "true" or importlib.util.find_spec(name)
    }
    assert installed <= set(data["overhead_s"])
    assert all(v > 0 for v in data["overhead_s"].values())
    assert data["machine"]["cores_logical"] >= 1 and data["measured_at"]
    assert data["details"]["quick"] is True
    assert "1" in data["random_words_per_s"] and data["random_words_per_s"]["1"] > 0
    again = jitlab_cli("machine", "--quick", "--cache", str(cache), "--json")
    assert again.returncode == 0, again.stderr
    cached = json.loads(again.stdout)
    assert cached["measured_now"] is False
    assert cached["bandwidth_bytes_per_s"] == data["bandwidth_bytes_per_s"]
    table = jitlab_cli("machine", "--quick", "--cache", str(cache))
    assert table.returncode == 0 and "memory bandwidth" in table.stdout and "cached" in table.stdout


def test_unwritable_cache_is_a_one_line_error_before_measuring(jitlab_cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for cache in (tmp_path, blocker / "peaks.json"):
        done = jitlab_cli("machine", "--quick", "--cache", str(cache))
        assert done.returncode == 2
        assert "jitlab: error:" in done.stderr and "measuring" not in done.stderr
        assert "Traceback" not in done.stderr
