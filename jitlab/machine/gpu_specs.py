"""Vendors' published peak figures for known NVIDIA GPUs, to show beside the measured ones.

Figures are the datasheet's *dense* tensor-core rates (the datasheets print the 2:4-sparsity rates,
twice as high, with an asterisk), memory bandwidth in bytes per second, and FP32 without tensor cores.
`None` where the GPU has no such unit (V100: no TF32 or BF16 tensor cores). Each entry names its
source. A model is recognised from the name the driver reports (`torch.cuda.get_device_name`,
`nvidia-smi`), e.g. "NVIDIA H100 80GB HBM3" (SXM), "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-40GB".
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

TB = 1e12
T = 1e12


@dataclass(frozen=True)
class GpuSpec:
    model: str
    memory_bandwidth_bytes_per_s: float
    flops_f32: float  # FP32, CUDA cores
    flops_tf32: float | None  # TF32 tensor cores, dense
    flops_bf16: float | None  # BF16 tensor cores, dense
    flops_f16: float | None  # FP16 tensor cores (FP32 accumulate, as torch's matmul), dense
    source: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def figure(self, key: str) -> float | None:
        """The published figure for a measured key ("bandwidth", "float32", "tf32", "bfloat16", "float16")."""
        return {
            "bandwidth": self.memory_bandwidth_bytes_per_s,
            "float32": self.flops_f32,
            "tf32": self.flops_tf32,
            "bfloat16": self.flops_bf16,
            "float16": self.flops_f16,
        }.get(key)


# (pattern matched against the reported name, case-insensitive; first match wins) -> spec
_SPECS: list[tuple[str, GpuSpec]] = [
    # NVIDIA H200 Tensor Core GPU datasheet (2024): H200 SXM 4.8 TB/s, FP32 67 TFLOPS, TF32 989,
    # BF16/FP16 1,979 TFLOPS with sparsity (dense: half).
    # Same datasheet: H200 NVL 4.8 TB/s, FP32 60 TFLOPS, TF32 835, BF16/FP16 1,671 with sparsity.
    (
        r"H200.*NVL",
        GpuSpec("H200 NVL 141GB", 4.8 * TB, 60 * T, 417.5 * T, 835.5 * T, 835.5 * T, "NVIDIA H200 datasheet"),
    ),
    (
        r"H200",
        GpuSpec("H200 SXM 141GB", 4.8 * TB, 67 * T, 494.5 * T, 989.5 * T, 989.5 * T, "NVIDIA H200 datasheet"),
    ),
    # NVIDIA H100 Tensor Core GPU datasheet (2023): H100 PCIe 2.0 TB/s, FP32 51 TFLOPS, TF32 756,
    # BF16/FP16 1,513 TFLOPS with sparsity (dense: half).
    (
        r"H100.*PCIe",
        GpuSpec("H100 PCIe 80GB", 2.0 * TB, 51 * T, 378 * T, 756.5 * T, 756.5 * T, "NVIDIA H100 datasheet"),
    ),
    # Same datasheet: H100 NVL 3.9 TB/s, FP32 60 TFLOPS, TF32 835, BF16/FP16 1,671 with sparsity.
    (
        r"H100.*NVL",
        GpuSpec("H100 NVL 94GB", 3.9 * TB, 60 * T, 417.5 * T, 835.5 * T, 835.5 * T, "NVIDIA H100 datasheet"),
    ),
    # Same datasheet: H100 SXM 3.35 TB/s, FP32 67 TFLOPS, TF32 989, BF16/FP16 1,979 with sparsity.
    (
        r"H100",
        GpuSpec("H100 SXM 80GB", 3.35 * TB, 67 * T, 494.5 * T, 989.5 * T, 989.5 * T, "NVIDIA H100 datasheet"),
    ),
    # NVIDIA A100 Tensor Core GPU datasheet (2021): FP32 19.5 TFLOPS, TF32 156, BF16/FP16 312 (dense);
    # bandwidth 1,555 GB/s (40GB), 1,935 GB/s (80GB PCIe), 2,039 GB/s (80GB SXM).
    (
        r"A100.*(SXM|HGX).*80\s*GB|A100.*80\s*GB.*(SXM|HGX)",
        GpuSpec("A100 SXM 80GB", 2.039 * TB, 19.5 * T, 156 * T, 312 * T, 312 * T, "NVIDIA A100 datasheet"),
    ),
    (
        r"A100.*80\s*GB",
        GpuSpec("A100 PCIe 80GB", 1.935 * TB, 19.5 * T, 156 * T, 312 * T, 312 * T, "NVIDIA A100 datasheet"),
    ),
    (
        r"A100.*PCI",
        GpuSpec("A100 PCIe 40GB", 1.555 * TB, 19.5 * T, 156 * T, 312 * T, 312 * T, "NVIDIA A100 datasheet"),
    ),
    (
        r"A100",
        GpuSpec("A100 SXM 40GB", 1.555 * TB, 19.5 * T, 156 * T, 312 * T, 312 * T, "NVIDIA A100 datasheet"),
    ),
    # NVIDIA L40S datasheet (2023): 864 GB/s, FP32 91.6 TFLOPS, TF32 183, BF16/FP16 362.05 (dense).
    (
        r"L40S",
        GpuSpec("L40S", 0.864 * TB, 91.6 * T, 183 * T, 362.05 * T, 362.05 * T, "NVIDIA L40S datasheet"),
    ),
    # NVIDIA L4 datasheet (2023): 300 GB/s, FP32 30.3 TFLOPS, TF32 120, BF16/FP16 242 with sparsity.
    (r"\bL4\b", GpuSpec("L4", 0.300 * TB, 30.3 * T, 60 * T, 121 * T, 121 * T, "NVIDIA L4 datasheet")),
    # NVIDIA A10 datasheet (2021): 600 GB/s, FP32 31.2 TFLOPS, TF32 62.5, BF16/FP16 125 (dense).
    (r"\bA10\b", GpuSpec("A10", 0.600 * TB, 31.2 * T, 62.5 * T, 125 * T, 125 * T, "NVIDIA A10 datasheet")),
    # NVIDIA V100 datasheet (2020): 900 GB/s; SXM2 FP32 15.7, tensor (FP16) 125 TFLOPS;
    # PCIe FP32 14, tensor 112. No TF32 or BF16.
    (r"V100.*PCI", GpuSpec("V100 PCIe", 0.900 * TB, 14 * T, None, None, 112 * T, "NVIDIA V100 datasheet")),
    (r"V100", GpuSpec("V100 SXM2", 0.900 * TB, 15.7 * T, None, None, 125 * T, "NVIDIA V100 datasheet")),
    # NVIDIA Ada Lovelace architecture whitepaper, appendix (RTX 4090): 1,008 GB/s, FP32 82.6
    # TFLOPS, TF32 82.6, BF16 and FP16 with FP32 accumulate 165.2 TFLOPS (dense).
    (
        r"RTX 4090",
        GpuSpec(
            "GeForce RTX 4090",
            1.008 * TB,
            82.6 * T,
            82.6 * T,
            165.2 * T,
            165.2 * T,
            "NVIDIA Ada Lovelace whitepaper",
        ),
    ),
]


def spec_for(device_name: str) -> GpuSpec | None:
    """The published figures for a GPU from the name its driver reports, or None when unknown."""
    for pattern, spec in _SPECS:
        if re.search(pattern, device_name, flags=re.IGNORECASE):
            return spec
    return None


def known_models() -> list[str]:
    return [spec.model for _, spec in _SPECS]
