"""The opcode handler table, filled by the `@handler("OPNAME")` decorator in the ops_* modules.

Every handler has one signature, `handler(interp, frame, instr) -> None`: it changes the frame (stack,
locals, `frame.pc` for jumps, `frame.signal` for return/yield) and returns nothing. Duplicates and
names that are not opcodes of the running Python are rejected at import time.
"""

from __future__ import annotations

import dis
from collections.abc import Callable
from typing import Any

Handler = Callable[[Any, Any, dis.Instruction], None]

HANDLERS: dict[str, Handler] = {}


def handler(*opnames: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of each opcode name given."""

    def register(fn: Handler) -> Handler:
        for name in opnames:
            if name not in dis.opmap:
                raise ValueError(f"{name} is not an opcode of this Python")
            if name in HANDLERS:
                raise ValueError(f"duplicate handler for {name}")
            HANDLERS[name] = fn
        return fn

    return register
