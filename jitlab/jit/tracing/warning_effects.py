"""`warnings.warn` in a jitted call, replayed as an effect instead of splitting the graph.

Whether a warning shows is decided on every call by the warning filters and by the once-per-place
registry in the calling module's globals. So the capture does not drop it: it records the call, and
the cache entry calls `warnings.warn` again after its graph, in order with the other effects, through
the same trampolines a call break uses (breaks/call_site.py), so the warning names the user's file
and line and the registry is the user's module's, as in eager code.

A replayed warning must not raise: under an "error" filter eager code raises at the `warn` line,
before the rest of the call runs, where the entry would already have run its graph. So the capture
works out the action of the first filter that matches, and guards `warnings.filters` as they were;
a warning whose action is "error", a message that is not a string, a category that is not a Warning
class, extra arguments, or a `stacklevel` above the jitted function stay call breaks
(break_tracer.py).
"""

from __future__ import annotations

import warnings
from typing import Any, Protocol

from jitlab.jit.breaks.call_site import called_from
from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.effects.replay import Effect
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.interpreter import Interpreter
from jitlab.jit.tracing.lookasides import NOT_HANDLED
from jitlab.jit.tracing.training_calls import PausingRecorder


def _bind(args: tuple, kwargs: dict) -> tuple[Any, Any, Any] | None:
    """(message, category, stacklevel) of a `warnings.warn` call without `source` or
    `skip_file_prefixes`; None for any other call."""
    names = ("message", "category", "stacklevel")
    if len(args) > 3 or set(kwargs) - set(names[len(args) :]):
        return None
    values = dict(zip(names, args)) | kwargs
    if "message" not in values:
        return None
    return values["message"], values.get("category"), values.get("stacklevel", 1)


def filter_action(message: str, category: type, module: str, lineno: int) -> str:
    """The action of the first warning filter matching a warning, as `warnings.warn_explicit`
    finds it ("default" when none matches)."""
    for action, msg, cat, mod, line in warnings.filters:
        if (
            (msg is None or msg.match(message))
            and issubclass(category, cat)
            and (mod is None or mod.match(module))
            and (line == 0 or lineno == line)
        ):
            return action
    return warnings.defaultaction


class WarningTracer(Protocol):
    """What the replayed warnings use of the break tracer (its guard builder changes at each graph
    break, so it is read at each warning); tests/jit/test_jit_owned_state.py checks the real one."""

    builder: GuardBuilder
    side_effects: SideEffects
    in_break: int

    @property
    def interpreter(self) -> Interpreter | None: ...

    @property
    def recorder(self) -> PausingRecorder: ...


class WarningEffects:
    """Owned by the break tracer (`tracer.warning_effects`): `warnings.warn` calls recorded as
    effects, and the guards that already hold the warning filters."""

    def __init__(self, tracer: WarningTracer) -> None:
        self.tracer = tracer
        self._filters_guarded: GuardBuilder | None = None  # the guards that hold the warning filters

    def replayed_warning(self, args: tuple, kwargs: dict) -> object:
        """Show the warning now, record it as an effect and return None; NOT_HANDLED when it must
        stay a call break."""
        tracer = self.tracer
        bound = _bind(args, kwargs)
        frames = getattr(tracer.interpreter, "frames", None)
        if bound is None or not frames:
            return NOT_HANDLED
        message, category, stacklevel = bound
        category = UserWarning if category is None else category
        if type(message) is not str or type(stacklevel) is not int or not 1 <= stacklevel <= len(frames):
            return NOT_HANDLED
        if not (isinstance(category, type) and issubclass(category, Warning)):
            return NOT_HANDLED
        sites = [(f.code, f.current_line(), f.globals) for f in frames]
        _code, lineno, globals_ = sites[-stacklevel]
        module = globals_.get("__name__", "<string>")
        if type(module) is not str or filter_action(message, category, module, lineno) == "error":
            return NOT_HANDLED
        builder = tracer.builder
        if self._filters_guarded is not builder:  # once per segment's guards
            self._filters_guarded = builder
            filters = builder.const(list(warnings.filters), "FILTERS")
            builder.global_state(
                f"{builder.const(warnings, 'WARNINGS')}.filters == {filters}",
                "the warning filters are as captured",
            )
        call = called_from(sites)
        tracer.in_break += 1  # the trampolines carry the user's code: not user code run natively
        try:
            with tracer.recorder.pause():
                call(warnings.warn, (message, category, stacklevel), {})
        finally:
            tracer.in_break -= 1
        tracer.side_effects.record(Effect("warn", call, None, (message, category, stacklevel)))
        return None
