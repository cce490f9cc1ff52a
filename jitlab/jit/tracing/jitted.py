"""`Jitted`: the base class of the callables `jit()` returns.

The tracer steps into a jitted callable met inside a captured program (it captures the function the
callable wraps). It recognises one by this base class, which lives in the tracing stage, so that
tracing never imports the frontend that defines `JitFunction`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Jitted:
    """A callable wrapping a user function; `_fn` is the function it wraps."""

    _fn: Callable[..., Any]

    @property
    def wrapped(self) -> Callable[..., Any]:
        """The user's function (or module) this callable compiles: what the tracer steps into."""
        return self._fn
