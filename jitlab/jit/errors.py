"""The JIT's internal signal for "this cannot be captured": the call then runs eagerly.

`Unsupported` derives from BaseException on purpose: interpreted user code with `except Exception`
must never swallow it, and it must never surface to the user (the JIT catches it and falls back).
"""

from __future__ import annotations


class Unsupported(BaseException):  # noqa: N818 - the name says what it means
    """Raised by the interpreter or the recorder for a construct it does not support."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
