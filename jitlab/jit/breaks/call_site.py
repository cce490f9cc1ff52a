"""A break call runs as if the user's lines called it.

A call break runs a native function between graphs: while capturing, from the interpreter; on a
hit, from the cache entry's generated code. Functions that look at their callers' frames would see
jitlab's frames instead of the user's: `logging` records the caller's file, line and function name
(`%(lineno)d`, `%(funcName)s` in a format), `warnings.warn` attributes a warning to its caller (or
to the caller `stacklevel` frames up, and keeps its once-per-location registry in that frame's module
globals), `inspect.stack()` lists them.

So the break calls its function through a chain of one-line trampolines, one per interpreted frame
of the call (outermost first), each carrying that frame's file name, current line, function name and
module globals: the frames such a function finds above itself, up to the jitted function's own, are
then indistinguishable from eager code's, for what these functions read.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Sequence
from typing import Any


def _trampoline(fn, args, kwargs):  # type: ignore[no-untyped-def]
    return fn(*args, **kwargs)


def _make_step(inner):  # type: ignore[no-untyped-def]
    def _step(fn, args, kwargs):  # type: ignore[no-untyped-def]
        return inner(fn, args, kwargs)

    return _step


_STEP_CODE = _make_step(None).__code__


@functools.lru_cache(maxsize=4096)
def _code_at(
    template: types.CodeType, filename: str, lineno: int, name: str, qualname: str
) -> types.CodeType:
    """`template` (a one-statement function) placed at `filename:lineno` inside a function called
    `name`: its lines are stored relative to its first line, so moving that line puts its call on
    `lineno`."""
    body = max(line for _start, _end, line in template.co_lines() if line is not None)
    first = lineno - (body - template.co_firstlineno)
    changes: dict[str, Any] = {"co_filename": filename, "co_firstlineno": max(first, 1), "co_name": name}
    if hasattr(template, "co_qualname"):
        changes["co_qualname"] = qualname
    return template.replace(**changes)


def _placed(template: types.CodeType, code: types.CodeType, lineno: int) -> types.CodeType:
    qualname = getattr(code, "co_qualname", code.co_name)
    return _code_at(template, code.co_filename, lineno, code.co_name, qualname)


def called_from(sites: Sequence[tuple[types.CodeType, int, dict[str, Any]]]) -> Callable[..., Any]:
    """A function `call(fn, args, kwargs)` that calls `fn(*args, **kwargs)` from frames that look like
    `sites`: (code, current line, module globals) of each interpreted frame, outermost first."""
    code, lineno, globals_ = sites[-1]  # never empty: break_site makes no break outside interpreted code
    call: Callable[..., Any] = types.FunctionType(
        _placed(_trampoline.__code__, code, lineno), globals_, code.co_name
    )
    for code, lineno, globals_ in reversed(sites[:-1]):
        call = types.FunctionType(
            _placed(_STEP_CODE, code, lineno), globals_, code.co_name, None, (types.CellType(call),)
        )
    return call
