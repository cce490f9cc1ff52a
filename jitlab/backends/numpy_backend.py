"""NumPy: vectorised array code, no JIT; the reference for what vectorisation alone buys."""

from __future__ import annotations

from jitlab.backends.base import Backend
from jitlab.backends.registry import register_backend


@register_backend
class NumpyBackend(Backend):
    name = "numpy"
    modules = ("numpy",)
    distribution = "numpy"
    description = "NumPy, vectorised, ahead-of-time compiled kernels"
