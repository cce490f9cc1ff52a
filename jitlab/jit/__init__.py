"""jitlab.jit: a MagPy-style graph-extracting JIT for Python + PyTorch programs.

`jit(fn_or_module, backend="inductor")` interprets the first call with a bytecode interpreter written
in Python (`jitlab.jit.interpreter`), records the tensor operations into a torch.fx graph, guards
every value read from outside, and replays side effects; later calls check the guards and run the
compiled graph. See docs/jit.md.

This module stays light (torch is imported on the first `jit(...)` call) because `jitlab` re-exports
`jit` and the command line must not pay for importing torch.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = ["Explanation", "JitFunction", "JitModule", "Unsupported", "explain_rule", "jit"]


def jit(fn_or_module: object, backend: str | Callable[..., Any] = "inductor", *, max_entries: int = 8) -> Any:
    """Compile a Python function or `nn.Module` by monitoring its execution (MagPy-style).

    Returns a callable that behaves like the original. `backend` is "inductor", "eager" (run the
    captured torch.fx graph as is), any torch.compile backend name, or a callable
    `backend(graph_module, example_inputs) -> callable`. After `max_entries` different captures the
    callable falls back to eager execution for good. `.explain()` on the result reports graphs,
    guards, data-dependent specialisations, replayed side effects and fallbacks.
    """
    from jitlab.jit.python_support import check_python

    check_python()  # before importing the interpreter and torch
    from jitlab.jit.frontend.api import jit as _jit

    return _jit(fn_or_module, backend, max_entries=max_entries)


def __getattr__(name: str) -> Any:
    if name in ("JitFunction", "JitModule"):
        from jitlab.jit.frontend import api

        return getattr(api, name)
    if name == "Unsupported":
        from jitlab.jit.errors import Unsupported

        return Unsupported
    if name == "Explanation":
        from jitlab.jit.frontend.explain import Explanation

        return Explanation
    if name == "explain_rule":  # whether the interpreter steps into a function, and why
        from jitlab.jit.tracing.trace_rules import explain_rule

        return explain_rule
    raise AttributeError(f"module 'jitlab.jit' has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """`jitlab.jit` is both this package and the function: once the package is imported, the
    attribute `jitlab.jit` is the module, so the module itself forwards calls to `jit`."""

    def __call__(
        self, fn_or_module: object, backend: str | Callable[..., Any] = "inductor", *, max_entries: int = 8
    ) -> Any:
        return jit(fn_or_module, backend, max_entries=max_entries)


sys.modules[__name__].__class__ = _CallableModule
