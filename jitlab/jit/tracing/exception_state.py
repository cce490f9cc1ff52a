"""`sys.exc_info()` and `sys.exception()` called by interpreted code.

Called natively, they would answer jitlab's own state: the exception being handled by the
interpreted program is the interpreter's (`Interpreter.handled_exception`), kept the way CPython
keeps it (one slot per running generator). Library code the interpreter steps into asks for it:
contextlib's `ExitStack.__exit__` does, to chain the exceptions its callbacks raise.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from jitlab.jit.tracing.lookasides import Lookasides, register_lookaside


def _exc_info(lookasides: Lookasides, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
    if args or kwargs:
        return None

    def run() -> Any:
        exc = lookasides.interp.handled_exception()
        return (None, None, None) if exc is None else (type(exc), exc, exc.__traceback__)

    return run


def _exception(lookasides: Lookasides, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
    if args or kwargs:
        return None
    return lookasides.interp.handled_exception


register_lookaside(sys.exc_info, _exc_info)
register_lookaside(sys.exception, _exception)
