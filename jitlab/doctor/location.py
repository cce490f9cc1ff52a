"""Where in the user's code something happened, and whether that line sits inside a loop.

Interception happens deep inside torch, so the Python stack at that moment is mostly torch's and
jitlab's own frames. The user's frame is the innermost one whose file is not library code (torch,
jitlab, site-packages, the standard library). Loops are read from the file's syntax tree: a line is
"in a loop" when it lies in the body of a `for`/`while` statement or a comprehension.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
import sysconfig
from pathlib import Path
from types import FrameType

import jitlab


def _library_roots() -> tuple[str, ...]:
    roots = {str(Path(jitlab.__file__).resolve().parent)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(str(Path(path).resolve()))
    try:
        import torch

        roots.add(str(Path(torch.__file__).resolve().parent))
    except ImportError:  # the doctor needs torch, but this module is importable without it
        pass
    return tuple(sorted(roots))


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    """True for files the user wrote: not torch, jitlab, site-packages or the standard library."""
    if not filename or filename.startswith("<"):
        return False
    resolved = os.path.realpath(filename)
    if "site-packages" in resolved or "dist-packages" in resolved:
        return False
    return not any(resolved == root or resolved.startswith(root + os.sep) for root in _library_roots())


def user_frames(start: FrameType | None = None) -> list[tuple[str, int]]:
    """The user's frames on the current stack as (file, line), innermost first."""
    frame = start if start is not None else sys._getframe(1)
    found: list[tuple[str, int]] = []
    while frame is not None:
        filename = frame.f_code.co_filename
        if is_user_file(filename):
            found.append((filename, frame.f_lineno))
        frame = frame.f_back
    return found


def user_functions(start: FrameType | None = None) -> list[tuple[str, int, str]]:
    """The user's functions on the current stack as (file, def line, name), innermost first: what
    the profiler names a Python function by."""
    frame = start if start is not None else sys._getframe(1)
    found: list[tuple[str, int, str]] = []
    while frame is not None:
        code = frame.f_code
        if is_user_file(code.co_filename):
            found.append((code.co_filename, code.co_firstlineno, code.co_name))
        frame = frame.f_back
    return found


def format_location(filename: str, line: int) -> str:
    """`file:line`, relative to the working directory when the file lies below it."""
    try:
        shown = os.path.relpath(filename)
    except ValueError:
        shown = filename
    if shown.startswith(".."):
        shown = filename
    return f"{shown}:{line}"


@functools.lru_cache(maxsize=256)
def _loop_lines(filename: str) -> dict[int, int]:
    """Line -> header line of the innermost loop that runs it once per iteration."""
    try:
        tree = ast.parse(Path(filename).read_text(), filename=filename)
    except (OSError, SyntaxError, ValueError):
        return {}
    lines: dict[int, int] = {}

    def mark(first: int, last: int, header: int) -> None:
        for line in range(first, last + 1):
            if lines.get(line, 0) < header:  # loops nested deeper start later
                lines[line] = header

    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            for statement in node.body:
                mark(statement.lineno, statement.end_lineno or statement.lineno, node.lineno)
            if isinstance(node, ast.While) and node.body:
                # a while loop's condition re-runs every iteration (`while x.any():`); a for loop's
                # iterable is evaluated once
                mark(node.lineno, node.body[0].lineno - 1, node.lineno)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            mark(node.lineno, node.end_lineno or node.lineno, node.lineno)
    return lines


def loop_header(filename: str, line: int) -> int | None:
    """The header line of the innermost loop that runs `line` once per iteration, or None."""
    return _loop_lines(filename).get(line)


def in_loop(filename: str, line: int) -> bool:
    """True when `line` of `filename` runs once per iteration of some loop."""
    return loop_header(filename, line) is not None
