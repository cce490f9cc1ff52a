"""GPU peaks: the vendor table recognises the models by their driver names, the doctor's roofline
takes a GPU's own peaks for work on that GPU, and (on a GPU) the probe measures sane figures."""

from __future__ import annotations

import pytest

from jitlab.doctor.regime import Work, shares_from
from jitlab.machine.gpu_specs import known_models, spec_for
from jitlab.machine.peaks import MachinePeaks, missing_gpu_peaks, save_peaks
from jitlab.store.machine import _torch_cuda_runtime, machine_info

H100 = {
    "index": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "bandwidth_bytes_per_s": 3.0e12,
    "flops": {"float32": 5.0e13, "tf32": 4.0e14, "bfloat16": 8.0e14, "float16": 8.0e14, "float64": 5e13},
    "launch_s": 4e-6,
}


def _peaks(gpus: list[dict]) -> MachinePeaks:
    return MachinePeaks(1e11, 1e12, 5e11, {"torch": 1e-5}, gpus=gpus, details={"quick": False})


@pytest.mark.parametrize(
    ("driver_name", "model"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM 80GB"),
        ("NVIDIA H100 PCIe", "H100 PCIe 80GB"),
        ("NVIDIA H200", "H200 SXM 141GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A10", "A10"),
        ("Tesla V100-SXM2-16GB", "V100 SXM2"),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
        ("NVIDIA GeForce RTX 3090", None),
    ],
)
def test_models_are_recognised_from_their_driver_names(driver_name, model):
    spec = spec_for(driver_name)
    assert (spec.model if spec else None) == model


def test_published_figures_are_dense_and_sourced():
    h100 = spec_for("NVIDIA H100 80GB HBM3")
    assert h100.memory_bandwidth_bytes_per_s == 3.35e12
    assert h100.flops_bf16 == 989.5e12 and h100.flops_tf32 == 494.5e12  # half the sparse 1,979 / 989
    assert spec_for("Tesla V100-PCIE-16GB").flops_bf16 is None  # no bfloat16 tensor cores
    assert all(spec_for(m) is not None for m in ("H200", "L40S", "L4", "A10", "V100", "RTX 4090"))
    assert len(known_models()) >= 12


def test_gpu_work_is_measured_against_the_gpus_peaks():
    peaks = _peaks([H100])
    on_gpu, on_cpu = Work(), Work()
    on_gpu.add("mm", flops=2e12, nbytes=1e9, float64=False, peaks=peaks, device="cuda:0", dtype="bfloat16")
    on_cpu.add("mm", flops=2e12, nbytes=1e9, float64=False, peaks=peaks, device="cpu", dtype="bfloat16")
    assert on_gpu.compute_s == pytest.approx(2e12 / 8.0e14) and on_gpu.bandwidth_s == 0
    assert on_cpu.compute_s == pytest.approx(2e12 / 1e12)
    assert on_gpu.overhead_s == pytest.approx(4e-6) and on_cpu.overhead_s == pytest.approx(1e-5)
    tf32 = Work()
    tf32.add("mm", 2e12, 1e9, False, peaks, device="cuda:0", dtype="float32", tf32=True)
    assert tf32.compute_s == pytest.approx(2e12 / 4.0e14)
    copy = Work()
    copy.add("copy_", 0.0, 6e9, False, peaks, device="cuda:0", dtype="float32")
    assert copy.bandwidth_s == pytest.approx(6e9 / 3.0e12)
    # the fit subtracts each size's counted overhead: the GPU's launch costs, not ops x the given cost
    bigger = Work()
    bigger.add("copy_", 0.0, 12e9, False, peaks, device="cuda:0", dtype="float32")
    bigger.add("add", 0.0, 0.0, False, peaks, device="cuda:0", dtype="float32")
    t1, t2 = 4e-6 + 2 * copy.device_s, 8e-6 + 2 * bigger.device_s
    _, efficiency, _ = shares_from(t1, t2, copy, bigger, overhead_per_op=1.0)
    assert efficiency == pytest.approx(0.5)


def test_without_gpu_peaks_the_hosts_are_used_and_a_gpu_machine_remeasures():
    peaks = _peaks([])
    assert peaks.device_rates("cuda:0", "float32") == (1e12, 1e11, None)
    assert missing_gpu_peaks(peaks, {"gpus": ["NVIDIA H100 80GB HBM3, 81559 MiB, 580.00"]})
    assert not missing_gpu_peaks(peaks, {"gpus": []})
    assert missing_gpu_peaks(
        peaks, {"gpus": [], "gpu_details": [{"index": 0, "name": "NVIDIA H100"}]}
    )  # NVML
    assert not missing_gpu_peaks(_peaks([H100]), {"gpus": ["NVIDIA H100 80GB HBM3, 81559 MiB, 580.00"]})


def test_torch_cuda_runtime_is_read_without_importing_torch():
    import torch

    assert _torch_cuda_runtime() == torch.version.cuda


@pytest.mark.gpu
def test_the_gpu_probe_measures_every_device():
    from jitlab.machine.measure import run_probe

    result = run_probe("gpu", quick=False)
    assert result["status"] == "ok", result.get("reason")
    for gpu in result["devices"]:
        assert gpu["bandwidth_bytes_per_s"] > 1e11
        assert set(gpu["flops"]) == {"float32", "tf32", "bfloat16", "float16", "float64"}
        assert gpu["flops"]["float16"] > gpu["flops"]["float32"]  # tensor cores
        assert 0 < gpu["launch_s"] < 1e-3 and gpu["launch_sync_s"] >= gpu["launch_s"] * 0.5
        assert gpu["h2d_bytes_per_s"] > 1e9 and gpu["d2h_bytes_per_s"] > 1e9
        vendor = gpu["vendor"]
        if vendor:  # bytes counted right: no copy beats the memory's published bandwidth
            assert gpu["bandwidth_bytes_per_s"] < 1.1 * vendor["memory_bandwidth_bytes_per_s"]


def test_jitlab_machine_shows_a_gpu_beside_its_published_figures(jitlab_cli, tmp_path):
    """The GPU table as `jitlab machine` prints it, from cached figures of an H100."""
    gpu = {
        **H100,
        "capability": "9.0",
        "memory_bytes": 85e9,
        "copy_bytes_per_s": 2.9e12,
        "triad_bytes_per_s": 3.0e12,
        "elements": 1 << 28,
        "launch_sync_s": 1.2e-5,
        "h2d_bytes_per_s": 5.5e10,
        "d2h_bytes_per_s": 5.3e10,
        "vendor": spec_for(H100["name"]).to_json(),
    }
    cache = tmp_path / "machine.json"
    save_peaks(MachinePeaks(1e11, 1e12, 5e11, {"torch": 1e-5}, gpus=[gpu], machine=machine_info()), cache)
    done = jitlab_cli("machine", "--cache", str(cache), env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert "GPU 0 · NVIDIA H100 80GB HBM3" in out and "H100 SXM 80GB" in out
    assert "3 TB/s" in out and "90% of the published 3.35 TB/s" in out
    assert "81% of the published 989.5 TFLOP/s" in out  # bfloat16: 800 of 989.5
    assert "4 µs" in out and "55 GB/s" in out
