"""Reads of environment variables (`os.environ.get`, `os.getenv`, `os.environ[...]`, `in os.environ`)
in captured code: each becomes a guard on that one variable, not a read of the whole environment.

`os.environ` is a mapping of the os module whose items live in a private dict of encoded keys; read
as a whole by native code, it could not be guarded, and the call fell back to eager. Libraries read
single variables to pick a code path (transformers' `TRANSFORMERS_SDPA_FORCE_GQA`), so each read
is guarded as `os.environ.get(name) == value`: a later change of that variable makes the entry
miss, and the call is captured again.
"""

from __future__ import annotations

import operator
import os
import types
from collections.abc import Callable
from typing import Any

_PLAIN = (str, int, float, bool, type(None))


def environment_key(fn: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[str, Any, str] | None:
    """(variable name, default, how) when `fn(*args, **kwargs)` reads one environment variable:
    how is "get" (the value or the default) or "contains"; None for any other call."""
    if fn is os.getenv:
        found = _key_and_default(args, kwargs)
        return (*found, "get") if found is not None else None
    if fn is operator.contains and len(args) == 2 and not kwargs and args[0] is os.environ:
        return (args[1], None, "contains") if type(args[1]) is str else None
    if type(fn) is types.FunctionType and fn.__name__ == "get" and args and args[0] is os.environ:
        found = _key_and_default(args[1:], kwargs)
        return (*found, "get") if found is not None else None
    return None


def _key_and_default(args: tuple, kwargs: dict) -> tuple[str, Any] | None:
    if not 1 <= len(args) <= 2 or set(kwargs) - {"default"} or type(args[0]) is not str:
        return None
    default = args[1] if len(args) == 2 else kwargs.get("default")
    return (args[0], default) if type(default) in _PLAIN else None


def guard_template(name: str) -> str:
    """The guarded expression, `{v}` standing for os.environ."""
    return f"{{v}}.get({name!r})"
