"""The places in jitlab.jit's own code through which a graph break may resume the program, marked
where they are defined.

`break_site` (interpreter/resumption.py) decides whether a break could be resumed by walking the
Python stack between the break and the interpreter's innermost `run_frame`. On that stack it must
recognise two kinds of jitlab.jit frames: a truth test's hook (the value is being tested by a
branch), and the two methods through which the interpreter's call handler reaches a native call
that may break. Each such method is marked with `resumable(role)`, which records its code object,
so renaming a method changes nothing, and a method added to that path is refused as a break site
(the capture then ends there, never resumes wrongly) until it is marked.

Why a walk of the Python stack rather than state the interpreter keeps: library code run natively
can re-enter interpreted code (a callback, a `__torch_function__` override, a generator driven by
native code) in ways the interpreter does not see. The Python stack is the one record of every
frame between the break and the interpreted code, so it is the safe test.

May import: nothing of jitlab.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType
from typing import Any, TypeVar

#: a hook that tests a value's truth for a branch (`Hooks.truth` and its overrides)
TRUTH = "truth"
#: the method that may turn a native call into a break (called by `NATIVE_CALL_OUTER`)
NATIVE_CALL_INNER = "native call, inner"
#: the hooks' `call_native`, which the interpreter's call handler calls for a native call
NATIVE_CALL_OUTER = "native call, outer"

_CODES: dict[str, set[CodeType]] = {TRUTH: set(), NATIVE_CALL_INNER: set(), NATIVE_CALL_OUTER: set()}

F = TypeVar("F", bound=Callable[..., Any])


def resumable(role: str) -> Callable[[F], F]:
    """Mark a function as a break site's frame of `role` (TRUTH, NATIVE_CALL_INNER, NATIVE_CALL_OUTER)."""
    codes = _CODES[role]  # an unknown role fails where the decorator is applied, at import

    def mark(fn: F) -> F:
        codes.add(fn.__code__)
        return fn

    return mark


def is_site(code: CodeType, role: str) -> bool:
    """Whether `code` is a function marked `resumable(role)`."""
    return code in _CODES[role]
