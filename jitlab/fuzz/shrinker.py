"""Delta debugging on a failing program: fewer statements, fewer calls, fewer changes, simpler form.

`shrink(program, fails)` is the ddmin algorithm (Zeller and Hildebrandt) over the body's
statements (remove chunks, halving their size until single statements), then over the schedule's
calls and each call's changes, then simplifications (return `h` itself, no training step), repeated
until nothing more can go. `fails` judges a list of candidates at once and says which still fail
the same way, so a caller can run each round's candidates in one worker process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from jitlab.fuzz.program import Call, Program

T = TypeVar("T")
#: which of the candidates still fail as the original did
Judge = Callable[[list[Program]], list[bool]]


def _chunks(items: Sequence[T], n: int) -> list[tuple[int, int]]:
    size, rest = divmod(len(items), n)
    bounds, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < rest else 0)
        if end > start:
            bounds.append((start, end))
        start = end
    return bounds


def ddmin(items: Sequence[T], build: Callable[[list[T]], Program], fails: Judge, keep: int = 0) -> list[T]:
    """A 1-minimal subsequence of `items` (of at least `keep` items) whose program still fails."""
    current = list(items)
    n = 2
    while len(current) > keep and len(current) >= 1:
        n = min(n, len(current))
        candidates = [current[:a] + current[b:] for a, b in _chunks(current, n)]
        candidates = [c for c in candidates if len(c) >= keep]
        verdicts = fails([build(c) for c in candidates]) if candidates else []
        chosen = next((c for c, failed in zip(candidates, verdicts) if failed), None)
        if chosen is not None:
            current, n = chosen, max(n - 1, 2)
            continue
        if n >= len(current):
            break
        n = min(len(current), 2 * n)
    return current


def _drop_changes(program: Program, fails: Judge) -> Program:
    for index in range(len(program.calls)):
        call = program.calls[index]

        def build(changes: list, index: int = index, call: Call = call, base: Program = program) -> Program:
            calls = list(base.calls)
            calls[index] = replace(call, changes=tuple(changes))
            return replace(base, calls=tuple(calls))

        if call.changes:
            program = build(ddmin(call.changes, build, fails))
    return program


def _shrink_body(program: Program, fails: Judge) -> Program:
    return replace(program, body=tuple(ddmin(program.body, lambda b: replace(program, body=tuple(b)), fails)))


def _shrink_calls(program: Program, fails: Judge) -> Program:
    calls = ddmin(program.calls, lambda c: replace(program, calls=tuple(c)), fails, keep=1)
    return replace(program, calls=tuple(calls))


def _simplify(program: Program, fails: Judge) -> Program:
    options = []
    if program.returns != "h":
        options.append(replace(program, returns="h"))
    if program.train:
        options.append(replace(program, train=False))
    plain = tuple(replace(c, options=(), extra=0, n=None) for c in program.calls)
    if plain != program.calls:
        options.append(replace(program, calls=plain))
    for candidate, failed in zip(options, fails(options) if options else []):
        if failed:
            return candidate
    return program


def shrink(program: Program, fails: Judge, passes: int = 3) -> Program:
    """The smallest program found that still fails as `program` does."""
    for _ in range(passes):
        before = program
        program = _shrink_body(program, fails)
        program = _shrink_calls(program, fails)
        program = _drop_changes(program, fails)
        simpler = _simplify(program, fails)
        while simpler != program:
            program, simpler = simpler, _simplify(simpler, fails)
        if program == before:
            break
    return program


def size(program: Program) -> str:
    """'5 statements, 3 calls, 2 changes'."""
    changes = sum(len(c.changes) for c in program.calls)
    return f"{len(program.body)} statements, {len(program.calls)} calls, {changes} changes"
