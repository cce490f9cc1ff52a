"""Plain CPython: the baseline every JIT is measured against."""

from __future__ import annotations

from jitlab.backends.base import Backend
from jitlab.backends.registry import register_backend


@register_backend
class PythonBackend(Backend):
    name = "python"
    description = "CPython interpreter, no compilation"

    def version(self) -> str | None:
        import platform

        return platform.python_version()
