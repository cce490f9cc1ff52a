"""Triton: hand-written block kernels; a real GPU launch when there is a GPU, the interpreter otherwise.

The interpreter (TRITON_INTERPRET=1) must be switched on before `import triton`, so it is decided
in `worker_environment`, before the worker process starts. Kernels must live in real source files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from jitlab.backends.registry import register_backend
from jitlab.backends.torch_backend import TorchBackend, _cuda_present


@register_backend
class TritonBackend(TorchBackend):
    name = "triton"
    modules = ("triton", "torch")
    distribution = "triton"
    extra = "triton"
    description = "Triton kernels (interpreted on the CPU when there is no GPU)"

    def worker_environment(self, threads: int, scratch_dir: str) -> Mapping[str, str]:
        env = dict(super().worker_environment(threads, scratch_dir))
        env["TRITON_CACHE_DIR"] = os.path.join(scratch_dir, "triton")
        if not _cuda_present():
            env["TRITON_INTERPRET"] = "1"
            # Stop glibc from mapping and unmapping every large temporary the interpreter makes:
            # it roughly triples the interpreter's speed.
            env["MALLOC_MMAP_THRESHOLD_"] = "2147483647"
            env["MALLOC_TRIM_THRESHOLD_"] = "2147483647"
        return env

    def devices(self) -> list[str]:
        if os.environ.get("TRITON_INTERPRET") == "1":
            return ["cpu (Triton interpreter)"]
        return super().devices()

    def device(self) -> str:
        return "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
