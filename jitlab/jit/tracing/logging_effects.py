"""Once-only logging (`logger.warning_once(...)`, `logger.info_once(...)`: transformers' loggers, a
`functools.lru_cache` around a logger method) in a jitted call, replayed as an effect instead of read
as a whole by native code (which kept GPT-2's loss, whose `loss_function` warns once, from any cache
entry).

The cache decides on every call whether the message is logged (the first time for these arguments
only); so the capture logs it as eager code does, records the call, and the cache entry calls the same
bound method again after its graph, in order with the other effects, through the trampolines of
the user's lines (breaks/call_site.py), as `warnings.warn` is replayed (warning_effects.py). Only
plain arguments (strings, numbers, None) are replayed; any other call stays what it was.
"""

from __future__ import annotations

import functools
import logging
import types
from typing import Any, Protocol

from jitlab.jit.breaks.call_site import called_from
from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.effects.replay import Effect
from jitlab.jit.interpreter import Interpreter
from jitlab.jit.tracing.lookasides import NOT_HANDLED
from jitlab.jit.tracing.training_calls import PausingRecorder

_PLAIN = (str, int, float, bool, type(None))
_LRU_WRAPPER = type(functools.lru_cache(None)(lambda: None))


def once_logging_call(fn: object) -> bool:
    """Whether `fn` is a logger's method wrapped by `functools.lru_cache` (transformers'
    `warning_once`, `info_once`)."""
    return (
        type(fn) is types.MethodType
        and type(fn.__func__) is _LRU_WRAPPER
        and isinstance(fn.__self__, logging.Logger)
    )


class LoggingTracer(Protocol):
    """What the replayed once-only logging uses of the break tracer; tests/jit/test_jit_owned_state.py
    checks the real one."""

    side_effects: SideEffects
    in_break: int

    @property
    def interpreter(self) -> Interpreter | None: ...

    @property
    def recorder(self) -> PausingRecorder: ...


class LoggingEffects:
    """Owned by the break tracer (`tracer.logging_effects`): once-only logging calls recorded as
    effects."""

    def __init__(self, tracer: LoggingTracer) -> None:
        self.tracer = tracer

    def replayed_once_log(self, fn: object, args: tuple, kwargs: dict) -> Any:
        """Log now, record the call as an effect and return its result; NOT_HANDLED when the call
        has arguments other than plain values."""
        tracer = self.tracer
        frames = getattr(tracer.interpreter, "frames", None)
        if not frames or kwargs or any(type(a) not in _PLAIN for a in args):
            return NOT_HANDLED
        call = called_from([(f.code, f.current_line(), f.globals) for f in frames])
        tracer.in_break += 1  # the trampolines carry the user's code: not user code run natively
        try:
            with tracer.recorder.pause():
                result = call(fn, args, {})
        finally:
            tracer.in_break -= 1
        tracer.side_effects.record(Effect("call", call, fn, args))
        return result
