"""Numba: LLVM-compiled loops, serial (`numba`) and multi-threaded with `prange` (`numba-parallel`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jitlab.backends.base import Backend
from jitlab.backends.registry import register_backend


@register_backend
class NumbaBackend(Backend):
    name = "numba"
    modules = ("numba",)
    distribution = "numba"
    extra = "numba"
    description = "numba.njit (LLVM), one thread"
    parallel = False

    def prepare(self, fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
        import numba

        options.setdefault("cache", False)  # a cached compile would hide the first-call cost
        return numba.njit(parallel=self.parallel, **options)(fn)

    def configure(self, threads: int) -> None:
        if self.parallel:
            import numba

            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))


@register_backend
class NumbaParallelBackend(NumbaBackend):
    name = "numba-parallel"
    description = "numba.njit(parallel=True) with prange, all threads"
    parallel = True
