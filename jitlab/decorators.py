"""The source blog post's decorators, done right, for quick use in scripts.

    @jitlab.timed
    @jitlab.accuracy(reference=math.pi)
    @numba.njit
    def estimate_pi(n): ...

`timed` waits for asynchronous results (JAX, CUDA tensors, TensorFlow) before stopping the clock
and logs the first call, which includes compilation, apart from later ones. `accuracy` logs the
absolute and relative error and the source's score 1 - |ref - v| / |ref|. Both log through the
`jitlab` logger at INFO level; `logging.basicConfig(level=logging.INFO)` shows them.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from jitlab.backends.sync import block_until_done, to_host_value

F = TypeVar("F", bound=Callable[..., Any])
logger = logging.getLogger("jitlab")


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def timed(fn: F | None = None, *, log: logging.Logger | None = None, level: int = logging.INFO) -> F:
    """Log the synchronised wall time of each call; the first call is labelled as including compilation."""

    def decorate(inner: F) -> F:
        name = _name(inner)
        calls = 0

        @functools.wraps(inner)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            start = time.perf_counter()
            result = inner(*args, **kwargs)
            block_until_done(result)
            elapsed = time.perf_counter() - start
            calls += 1
            label = "first call (includes compilation)" if calls == 1 else f"call {calls}"
            (log or logger).log(
                level,
                "%s: %s took %.6g s",
                name,
                label,
                elapsed,
                extra={"jitlab_time_s": elapsed, "jitlab_call": calls},
            )
            wrapper.last_time_s = elapsed  # type: ignore[attr-defined]
            return result

        wrapper.last_time_s = None  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate(fn) if fn is not None else decorate  # type: ignore[return-value]


def accuracy(
    reference: Any, *, log: logging.Logger | None = None, level: int = logging.INFO
) -> Callable[[F], F]:
    """Log the error of each result against `reference` (a value, or a callable of the same arguments)."""

    def decorate(inner: F) -> F:
        name = _name(inner)

        @functools.wraps(inner)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = inner(*args, **kwargs)
            expected = reference(*args, **kwargs) if callable(reference) else reference
            value = np.asarray(to_host_value(result), dtype=np.float64)
            ref = np.asarray(expected, dtype=np.float64)
            abs_err = float(np.max(np.abs(value - ref)))
            scale = float(np.max(np.abs(ref))) or 1.0
            rel_err = abs_err / scale
            score = 1.0 - rel_err
            (log or logger).log(
                level,
                "%s: error %.3g (relative %.3g, score 1-|ref-v|/|ref| = %.9f)",
                name,
                abs_err,
                rel_err,
                score,
                extra={"jitlab_error": abs_err, "jitlab_relative_error": rel_err, "jitlab_score": score},
            )
            wrapper.last_error = abs_err  # type: ignore[attr-defined]
            return result

        wrapper.last_error = None  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
