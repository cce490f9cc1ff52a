"""Why a call was not captured as one graph, structured: a kind, the message, the user's `file:line`
(when known) and a hint, so that `.explain()` and `jitlab capture` can group reasons by kind.

The kinds are assigned in one place, `kind_of`, from the reason's message (the messages are made by the
stages that find the problem; this table is the one list of what they mean). A message no rule knows
is `OTHER`; a test keeps the corpus' reasons out of it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ReasonKind(str, enum.Enum):
    """What kind of obstacle kept a call from being one cached graph."""

    UNSUPPORTED_CODE = "unsupported-code"  # bytecode or a construct the interpreter does not run
    LIBRARY_CALLBACK = "library-callback"  # library code calls user code back natively
    NATIVE_CALL = "native-call"  # a module, class or autograd Function run natively
    DATA_DEPENDENT = "data-dependent"  # Python decides on tensor data or on a random draw
    GLOBAL_STATE = "global-state"  # autocast, global hooks, torch's global state, lazy modules
    SIDE_EFFECT = "side-effect"  # a write to outside state that cannot be replayed
    UNTRACKED_VALUE = "untracked-value"  # a value whose origin or content cannot be guarded or rebuilt
    USER_EXCEPTION = "user-exception"  # the program raised while it was captured
    CACHE_LIMIT = "cache-limit"  # too many different captures
    INTERNAL = "internal-error"  # a bug in jitlab.jit; the call's result is still right
    OTHER = "other"


# (fragment of the message, kind), tried in order: the first fragment found decides
_RULES: tuple[tuple[str, ReasonKind], ...] = (
    ("internal error", ReasonKind.INTERNAL),
    ("cache limit reached", ReasonKind.CACHE_LIMIT),
    ("calls user code back", ReasonKind.LIBRARY_CALLBACK),
    ("calls the user function", ReasonKind.LIBRARY_CALLBACK),
    ("called by library code", ReasonKind.LIBRARY_CALLBACK),
    ("cannot be interpreted", ReasonKind.UNSUPPORTED_CODE),
    ("is not supported", ReasonKind.UNSUPPORTED_CODE),
    ("are not supported", ReasonKind.UNSUPPORTED_CODE),
    ("calls nested deeper", ReasonKind.UNSUPPORTED_CODE),
    ("user function ran natively", ReasonKind.UNSUPPORTED_CODE),
    ("is called natively", ReasonKind.NATIVE_CALL),
    ("is applied natively", ReasonKind.NATIVE_CALL),
    ("is constructed natively", ReasonKind.NATIVE_CALL),
    ("decides on tensor data", ReasonKind.DATA_DEPENDENT),
    ("data-dependent", ReasonKind.DATA_DEPENDENT),
    ("random module", ReasonKind.DATA_DEPENDENT),
    ("specialised on", ReasonKind.DATA_DEPENDENT),
    ("symbolic sizes", ReasonKind.DATA_DEPENDENT),
    ("autocast", ReasonKind.GLOBAL_STATE),
    ("global module hooks", ReasonKind.GLOBAL_STATE),
    ("global state", ReasonKind.GLOBAL_STATE),
    ("lazy module", ReasonKind.GLOBAL_STATE),
    ("raised", ReasonKind.USER_EXCEPTION),
    ("not replayed", ReasonKind.SIDE_EFFECT),
    ("del of", ReasonKind.SIDE_EFFECT),
    ("write", ReasonKind.SIDE_EFFECT),
    ("changes outside state", ReasonKind.SIDE_EFFECT),
    ("inserts it", ReasonKind.SIDE_EFFECT),
    ("after changing it", ReasonKind.SIDE_EFFECT),
    ("unknown effect", ReasonKind.SIDE_EFFECT),
    ("unknown origin", ReasonKind.UNTRACKED_VALUE),
    ("cannot rebuild", ReasonKind.UNTRACKED_VALUE),
    ("without guard", ReasonKind.UNTRACKED_VALUE),
    ("nested too deeply", ReasonKind.UNTRACKED_VALUE),
    ("read as a whole", ReasonKind.UNTRACKED_VALUE),
    ("cannot be compared", ReasonKind.UNTRACKED_VALUE),
    ("extra attributes", ReasonKind.UNTRACKED_VALUE),
    # last: every reason that made a call run eagerly is prefixed "unsupported: ", whatever its cause
    ("unsupported:", ReasonKind.UNSUPPORTED_CODE),
)

HINTS: dict[ReasonKind, str] = {
    ReasonKind.UNSUPPORTED_CODE: "move the construct out of the jitted code, or into a function that runs eagerly",
    ReasonKind.LIBRARY_CALLBACK: "call the user function directly instead of through the library function",
    ReasonKind.NATIVE_CALL: "remove backward hooks, or call the module's code directly",
    ReasonKind.DATA_DEPENDENT: "keep decisions on tensor values out of the jitted code (torch.where, masks)",
    ReasonKind.GLOBAL_STATE: "set global state (autocast, hooks, lazy parameters) outside the jitted call",
    ReasonKind.SIDE_EFFECT: "return the value instead of writing it to outside state",
    ReasonKind.UNTRACKED_VALUE: "pass the value as an argument, or build it inside the call",
    ReasonKind.USER_EXCEPTION: "the program raised: fix the error, then the call can be captured",
    ReasonKind.CACHE_LIMIT: "raise max_entries, or keep the guarded values (types, sizes, globals) stable",
    ReasonKind.INTERNAL: "a bug in jitlab.jit: please report it with the message",
    ReasonKind.OTHER: "see the message",
}


def kind_of(message: str) -> ReasonKind:
    """The kind of a reason, from its message."""
    for fragment, kind in _RULES:
        if fragment in message:
            return kind
    return ReasonKind.OTHER


@dataclass(frozen=True)
class Reason:
    """One reason a call was not captured as one graph: a fallback to eager, a graph break or a
    specialisation on a data value."""

    kind: ReasonKind
    message: str
    where: str | None = None  # the user's file:line, when the reason has a place
    what: str = "fallback"  # "fallback", "graph break" or "specialisation"

    @property
    def hint(self) -> str:
        return HINTS[self.kind]

    @classmethod
    def of(cls, message: str, where: str | None = None, what: str = "fallback") -> Reason:
        return cls(kind_of(message), message, where, what)

    def __str__(self) -> str:
        at = f" at {self.where}" if self.where else ""
        return f"[{self.kind.value}] {self.what}{at}: {self.message} (hint: {self.hint})"
