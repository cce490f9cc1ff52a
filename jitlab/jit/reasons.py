"""Why a call was not captured as one graph, structured: a kind, the message, the user's `file:line`
(when known) and a hint, so that `.explain()` and `jitlab capture` can group reasons by kind.

The kind is decided where the problem is found: every place that records a problem (the tracer's
`problem(message, kind)`, `Unsupported(message, kind)`, a graph break's reason) says what kind of
obstacle it met, and the kind travels with the message as a `Reason` up to `.explain()`. Nothing
reads a kind back from a message's text, so rewording a message cannot move it to another kind.

This module is the lowest stage of jitlab.jit: it imports nothing from it, so every stage above
the interpreter (which stays alone) may name a kind.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass


class ReasonKind(str, enum.Enum):
    """What kind of obstacle kept a call from being one cached graph."""

    UNSUPPORTED_CODE = "unsupported-code"  # bytecode or a construct the interpreter does not run
    LIBRARY_CALLBACK = "library-callback"  # library code calls user code back natively
    NATIVE_CALL = "native-call"  # a module, class or autograd Function run natively
    MARKED_NATIVE = "marked-native"  # a function the user marked to run eagerly (torch.compiler.disable)
    DATA_DEPENDENT = "data-dependent"  # Python decides on tensor data or on a random draw
    GLOBAL_STATE = "global-state"  # autocast, global hooks, torch's global state, lazy modules
    SIDE_EFFECT = "side-effect"  # a write to outside state that cannot be replayed
    UNTRACKED_VALUE = "untracked-value"  # a value whose origin or content cannot be guarded or rebuilt
    USER_EXCEPTION = "user-exception"  # the program raised while it was captured
    CACHE_LIMIT = "cache-limit"  # too many different captures
    INTERNAL = "internal-error"  # a bug in jitlab.jit; the call's result is still right


HINTS: dict[ReasonKind, str] = {
    ReasonKind.UNSUPPORTED_CODE: "move the construct out of the jitted code, or into a function that runs eagerly",
    ReasonKind.LIBRARY_CALLBACK: "call the user function directly instead of through the library function",
    ReasonKind.NATIVE_CALL: "remove backward hooks, or call the module's code directly",
    ReasonKind.MARKED_NATIVE: "the function is marked torch.compiler.disable: remove the mark to capture it",
    ReasonKind.DATA_DEPENDENT: "keep decisions on tensor values out of the jitted code (torch.where, masks)",
    ReasonKind.GLOBAL_STATE: (
        "set global hooks and lazy parameters before the call; enter autocast inside the call with "
        "`with torch.autocast(...)`, and keep graph breaks out of the region"
    ),
    ReasonKind.SIDE_EFFECT: "return the value instead of writing it to outside state",
    ReasonKind.UNTRACKED_VALUE: "pass the value as an argument, or build it inside the call",
    ReasonKind.USER_EXCEPTION: "the program raised: fix the error, then the call can be captured",
    ReasonKind.CACHE_LIMIT: "raise max_entries, or keep the guarded values (types, sizes, globals) stable",
    ReasonKind.INTERNAL: "a bug in jitlab.jit: please report it with the message",
}

# When one fallback has several problems (their messages joined), the kind it is filed under: the
# first of its problems' kinds in this order. A bug of jitlab.jit comes first (nothing the user does
# helps), then what stops capture whatever the values are (the cache limit, code run natively), then
# what depends on the values the program meets.
PRECEDENCE: tuple[ReasonKind, ...] = (
    ReasonKind.INTERNAL,
    ReasonKind.CACHE_LIMIT,
    ReasonKind.LIBRARY_CALLBACK,
    ReasonKind.UNSUPPORTED_CODE,
    ReasonKind.MARKED_NATIVE,
    ReasonKind.NATIVE_CALL,
    ReasonKind.DATA_DEPENDENT,
    ReasonKind.GLOBAL_STATE,
    ReasonKind.USER_EXCEPTION,
    ReasonKind.SIDE_EFFECT,
    ReasonKind.UNTRACKED_VALUE,
)


@dataclass(frozen=True)
class Reason:
    """One reason a call was not captured as one graph: a fallback to eager, a graph break or a
    specialisation on a data value. Also what the stages of a capture pass up: a problem the tracer
    met, with the line running then, and a graph break's reason."""

    kind: ReasonKind
    message: str
    where: str | None = None  # the user's file:line, when the reason has a place
    what: str = "fallback"  # "fallback", "graph break" or "specialisation"
    # a fallback made of several problems (`combined`): each problem with its own place; `message`
    # joins theirs. Empty for a single problem.
    parts: tuple[Reason, ...] = ()

    @property
    def hint(self) -> str:
        return HINTS[self.kind]

    def __str__(self) -> str:
        at = f" at {self.where}" if self.where else ""
        return f"[{self.kind.value}] {self.what}{at}: {self.message} (hint: {self.hint})"


def combined(reasons: Sequence[Reason]) -> Reason:
    """One fallback for several problems of one capture: their messages joined by "; ", the first
    place known, and the kind that comes first in `PRECEDENCE`; `parts` keeps each problem with its
    own place (the doctor reports each at its line)."""
    if not reasons:
        raise ValueError("combined() needs at least one reason")
    kind = min((r.kind for r in reasons), key=PRECEDENCE.index)
    where = next((r.where for r in reasons if r.where is not None), None)
    parts = tuple(p for r in reasons for p in (r.parts or (r,)))
    return Reason(kind, "; ".join(r.message for r in reasons), where, parts=parts if len(parts) > 1 else ())


def training_problem(what: str) -> tuple[str, ReasonKind]:
    """The problem noted when a call does a part of a training step jitlab.jit does not capture (a hook
    registered in the call, an optimizer of another package run natively; see native_calls.py), and
    its kind: a construct jitlab.jit does not capture (the fix is to move it out of the jitted call)."""
    message = f"{what} inside the call is not captured: register it, or step that optimizer, outside the jitted call"
    return message, ReasonKind.UNSUPPORTED_CODE
