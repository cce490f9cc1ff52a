"""The small interface every JIT backend implements.

A backend knows whether its framework is installed, its version, the devices it can use, how to
compile ("prepare") a Python function, how to wait for a result (asynchronous frameworks return
before the work is done) and how to bring a result to the host. Frameworks are imported lazily,
inside methods, so that listing backends never imports TensorFlow and Triton into one process
(they abort together, see the worker isolation in `jitlab.engine`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from jitlab.backends.sync import block_until_done, to_host_value

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")


class Backend:
    """One way of running Python numerics: a framework plus a compilation mode."""

    name: ClassVar[str]
    #: importable modules that must all be present
    modules: ClassVar[tuple[str, ...]] = ()
    #: the distribution whose version is reported
    distribution: ClassVar[str | None] = None
    #: the `pip install 'jitlab[extra]'` that brings it
    extra: ClassVar[str | None] = None
    #: True when calls return before the result exists (JAX everywhere, CUDA tensors)
    asynchronous: ClassVar[bool] = False
    description: ClassVar[str] = ""

    # -- availability, without importing the framework ------------------------------------------
    def is_available(self) -> bool:
        return all(importlib.util.find_spec(m) is not None for m in self.modules)

    def version(self) -> str | None:
        if self.distribution is None:
            return None
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None

    @property
    def install_hint(self) -> str:
        if self.extra is None:
            return "built in"
        from jitlab.backends.install import install_command  # reads package metadata: only when asked

        return install_command(self.extra)

    # -- process set-up ------------------------------------------------------------------------
    def worker_environment(self, threads: int, scratch_dir: str) -> Mapping[str, str]:
        """Environment variables the worker needs before it imports the framework.

        `scratch_dir` is a fresh folder per cell: compilers that cache on disk are pointed there so
        that the first call is a true cold start.
        """
        return {var: str(threads) for var in THREAD_ENV_VARS}

    def seed_scratch(self, scratch_dir: str) -> None:
        """Put into a cell's fresh `scratch_dir`, before its first process starts, what a user's
        machine holds before their program's first call anyway: machine-wide probes of a compiler,
        never code compiled for the program."""

    def configure(self, threads: int) -> None:
        """Called in the worker after import to apply thread settings the environment cannot."""

    # -- running ---------------------------------------------------------------------------------
    def devices(self) -> list[str]:
        return ["cpu"]

    def device(self) -> str:
        """The device this backend computes on: the first GPU when there is one, else the CPU."""
        return self.devices()[0]

    def device_description(self) -> str:
        """The device as recorded with a cell: `device()`, with the GPU's model where there is one."""
        return self.device()

    def prepare(self, fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
        """Compile `fn` the way this backend does (identity for interpreters and eager modes)."""
        return fn

    def synchronize(self, result: Any) -> None:
        """Block until `result` exists. Timing without this measures dispatch only."""
        block_until_done(result)

    def to_host(self, result: Any) -> Any:
        """A NumPy array or Python scalar with the result's value."""
        return to_host_value(result)

    def peak_device_memory(self) -> int | None:
        """Peak bytes allocated on an accelerator in this process, when there is one."""
        return None

    def reset_peak_device_memory(self) -> None:
        """Start a new peak for `peak_device_memory` (where the framework allows it)."""

    def cuda_event_device(self) -> str | None:
        """The CUDA device (torch's name, e.g. "cuda") whose current torch stream runs this backend's
        work, so CUDA events can time it; None when there is none (CPU, or a framework with streams
        of its own such as JAX, timed by the host clock after `synchronize`)."""
        return None

    def __repr__(self) -> str:
        return f"<backend {self.name}>"


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
