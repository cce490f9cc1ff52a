"""Which Pythons jitlab.jit runs on, checked before anything heavy is imported.

jitlab.jit interprets CPython bytecode, which changes with every minor version; it supports the versions
its interpreter has handler tables for. The check lives in this light module so that `jitlab.jit(...)`
on another Python fails with one clear line instead of an import error from deeper down.
"""

from __future__ import annotations

import sys

from jitlab.errors import UserError

#: (major, minor) versions whose bytecode the interpreter runs (jitlab.jit.interpreter.opcodes)
SUPPORTED_PYTHONS: tuple[tuple[int, int], ...] = ((3, 11), (3, 12), (3, 13))


def check_python(version: tuple[int, int] | None = None) -> None:
    """Raise UserError unless `version` (default: the running Python) is supported."""
    major, minor = version if version is not None else sys.version_info[:2]
    if (major, minor) not in SUPPORTED_PYTHONS:
        names = ", ".join(f"{a}.{b}" for a, b in SUPPORTED_PYTHONS)
        raise UserError(
            f"jitlab.jit runs on CPython {names} (it interprets their bytecode); this is Python "
            f"{major}.{minor}: run it with one of those"
        )
