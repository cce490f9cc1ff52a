"""The opcode handler tables, filled by the `@handler("OPNAME", versions=...)` decorator.

Every handler has one signature, `handler(interp, frame, instr) -> None`: it changes the frame (stack,
locals, `frame.pc` for jumps, `frame.signal` for return/yield) and returns nothing. A handler is
registered for the CPython versions whose semantics it implements (all supported versions unless
`versions` says otherwise); only the running version's table, `HANDLERS`, is used. Names are checked
against each version's opcode list (`opcodes.OPNAMES`), so a misspelt name or a handler registered
twice for one version fails at import on every Python, while an opcode that the running Python lacks
never does.

`check(instr, instructions, index)` optionally says why one particular instruction cannot be run (an
oparg the handler does not implement, a bytecode shape it relies on that is not there): the function is
then reported unsupported and runs natively instead of being run wrongly.
"""

from __future__ import annotations

import dis
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from jitlab.jit.interpreter.opcodes import INTERNAL, OPNAMES, SUPPORTED_VERSIONS, UNSUPPORTED, Version

Handler = Callable[[Any, Any, dis.Instruction], None]
Check = Callable[[dis.Instruction, tuple, int], "str | None"]

RUNNING: Version = (sys.version_info[0], sys.version_info[1])


@dataclass(frozen=True)
class Entry:
    """A registered handler and its optional per-instruction check."""

    handler: Handler
    check: Check | None = None


#: version -> opcode name -> entry, for every supported version (whichever Python is running).
TABLES: dict[Version, dict[str, Entry]] = {v: {} for v in SUPPORTED_VERSIONS}
#: The running Python's table (empty on a version jitlab.jit does not support).
HANDLERS: dict[str, Entry] = TABLES.get(RUNNING, {})


def handler(
    *opnames: str, versions: Iterable[Version] = SUPPORTED_VERSIONS, check: Check | None = None
) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of each opcode name, on each version given."""
    versions = tuple(versions)

    def register(fn: Handler) -> Handler:
        for version in versions:
            if version not in TABLES:
                raise ValueError(
                    f"{fn.__name__}: Python {version[0]}.{version[1]} is not a supported version"
                )
            table = TABLES[version]
            for name in opnames:
                if name not in OPNAMES[version]:
                    raise ValueError(f"{name} is not an opcode of Python {version[0]}.{version[1]}")
                if name in table:
                    raise ValueError(f"duplicate handler for {name} on Python {version[0]}.{version[1]}")
                table[name] = Entry(fn, check)
        return fn

    return register


def unsupported_opcode(name: str) -> str:
    """The reason given for a function that uses the opcode `name`, which has no handler."""
    why = UNSUPPORTED.get(name)
    return f"opcode {name} is not supported" + (f" ({why})" if why else "")


def coverage() -> dict[str, list[str]]:
    """The running Python's opcodes (`dis.opmap`) sorted into handled, unsupported (with a reason in
    `opcodes.UNSUPPORTED`), internal (never in a function's decoded bytecode) and unknown (none of
    these: a test requires this list to be empty)."""
    out: dict[str, list[str]] = {"handled": [], "unsupported": [], "internal": [], "unknown": []}
    for name, number in sorted(dis.opmap.items()):
        if name in HANDLERS:
            out["handled"].append(name)
        elif name in UNSUPPORTED:
            out["unsupported"].append(name)
        elif number >= 256 or name.startswith("INSTRUMENTED_") or name in INTERNAL:
            out["internal"].append(name)
        else:
            out["unknown"].append(name)
    return out


#: version -> name -> function, for the few version differences that live outside opcode handlers
#: (how a generator resumes after the iterator it delegates to raised, what close() returns).
BEHAVIOURS: dict[Version, dict[str, Callable[..., Any]]] = {v: {} for v in SUPPORTED_VERSIONS}
RUNNING_BEHAVIOURS: dict[str, Callable[..., Any]] = BEHAVIOURS.get(RUNNING, {})


def behaviour(name: str, versions: Iterable[Version]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the `name` behaviour of each version given."""
    versions = tuple(versions)

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for version in versions:
            if version not in BEHAVIOURS:
                raise ValueError(
                    f"{fn.__name__}: Python {version[0]}.{version[1]} is not a supported version"
                )
            if name in BEHAVIOURS[version]:
                raise ValueError(f"duplicate behaviour {name} on Python {version[0]}.{version[1]}")
            BEHAVIOURS[version][name] = fn
        return fn

    return register
