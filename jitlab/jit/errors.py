"""The JIT's internal signal for "this cannot be captured": the call then runs eagerly.

`Unsupported` derives from BaseException on purpose: interpreted user code with `except Exception`
must never swallow it, and it must never surface to the user (the JIT catches it and falls back).
It carries the kind of obstacle (jitlab.jit.reasons) along with its message, stated where it is
raised, so that the fallback or the failed graph break it becomes is reported under that kind.
"""

from __future__ import annotations

from jitlab.jit.reasons import Reason, ReasonKind


class Unsupported(BaseException):  # noqa: N818 - the name says what it means
    """Raised by the interpreter's hooks, the recorder or a planner for a construct it does not support."""

    def __init__(self, reason: str, kind: ReasonKind) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind

    def as_reason(self) -> Reason:
        """The message and its kind, as the reason a capture passes up."""
        return Reason(self.kind, self.reason)
