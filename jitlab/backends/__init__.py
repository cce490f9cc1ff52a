"""JIT backends: one module per framework, one small interface (`Backend`), one registry."""

from jitlab.backends.base import Backend
from jitlab.backends.registry import all_backends, backend_names, get_backend, register_backend

__all__ = ["Backend", "all_backends", "backend_names", "get_backend", "register_backend"]
