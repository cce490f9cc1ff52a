"""PyTorch eager (`torch`) and `torch.compile` with Inductor (`torch-compile`).

On a GPU, CUDA kernels run asynchronously, so both backends are asynchronous there and are
synchronised with `torch.cuda.synchronize`; on the CPU PyTorch is synchronous.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jitlab.backends.base import Backend
from jitlab.backends.registry import register_backend


def _cuda_present() -> bool:
    # Decided without importing torch: used for the class attribute `asynchronous`.
    return os.path.exists("/dev/nvidiactl") or bool(os.environ.get("CUDA_VISIBLE_DEVICES"))


@register_backend
class TorchBackend(Backend):
    name = "torch"
    modules = ("torch",)
    distribution = "torch"
    extra = "torch"
    description = "PyTorch eager mode"

    @property
    def asynchronous(self) -> bool:  # type: ignore[override]
        """CUDA kernels return before they finish; CPU operators do not. Asked of torch itself, in
        the worker (a GPU host with a CPU-only torch is synchronous)."""
        import torch

        return torch.cuda.is_available()

    def configure(self, threads: int) -> None:
        import torch

        torch.set_num_threads(threads)

    def devices(self) -> list[str]:
        import torch

        gpus = [f"cuda:{i} ({torch.cuda.get_device_name(i)})" for i in range(torch.cuda.device_count())]
        return gpus + ["cpu"]

    def device(self) -> str:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def device_description(self) -> str:
        """e.g. "cuda:0 (NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB, CUDA runtime 13.0)"."""
        device = self.device()
        if not device.startswith("cuda"):
            return device
        import torch

        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        return (
            f"cuda:{index} ({props.name}, sm_{props.major}{props.minor}, "
            f"{props.total_memory / 1024**3:.1f} GiB, CUDA runtime {torch.version.cuda})"
        )

    def peak_device_memory(self) -> int | None:
        import torch

        return torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None

    def reset_peak_device_memory(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()

    def cuda_event_device(self) -> str | None:
        device = self.device()
        return device if device.startswith("cuda") else None


@register_backend
class TorchCompileBackend(TorchBackend):
    name = "torch-compile"
    description = "torch.compile with TorchInductor (C++/OpenMP on the CPU, Triton on a GPU)"

    def worker_environment(self, threads: int, scratch_dir: str) -> Mapping[str, str]:
        env = dict(super().worker_environment(threads, scratch_dir))
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(scratch_dir, "inductor")
        env["TRITON_CACHE_DIR"] = os.path.join(scratch_dir, "triton")
        return env

    def seed_scratch(self, scratch_dir: str) -> None:
        """Inductor's probe of the CPU's vector instructions, made once per machine (see
        `inductor_isa`): otherwise every cell's cold first call pays it."""
        from jitlab.backends.inductor_isa import seed_cache

        seed_cache(Path(scratch_dir) / "inductor")

    def prepare(self, fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
        import torch

        options.setdefault("backend", "inductor")
        return torch.compile(fn, **options)
