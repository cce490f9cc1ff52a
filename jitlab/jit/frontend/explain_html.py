"""`Explanation.html(path)`: what jitlab.jit did for one callable, as one browsable HTML page.

TorchDynamo users read `TORCH_LOGS` and tlparse's pages; this is jitlab.jit's counterpart, built only
from the public fields of `Explanation` (so it shows whatever `explain()` knows, nothing more):

- the summary: captures, misses, hits, cache entries, graphs per call, breaks, time in the calls that
  missed (capturing and compiling), and a fallback to eager for good;
- the source of the jitted function, every graph break, fallback, specialisation on a data value and
  pinned size marked at its line (places in other functions or files are shown as excerpts);
- why the calls were not one graph, grouped by kind (`jitlab.jit.reasons`), with hints;
- the misses, each with the guard that failed, where `explain()` records it;
- each cache entry: its graphs' code, its guards, re-checked values, replayed effects and notes.

Rendered with Jinja2 (autoescape on: every string comes from user code), no script, one file.
"""

from __future__ import annotations

import ast
import linecache
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitlab.errors import UserError

# `Explanation` (explain.py) calls this module from its `html()` method; it is not imported here, so
# that the two do not import each other: the functions take it as `e`, read through its public fields.
Explanation = Any

TEMPLATE = "explain.html.j2"
CONTEXT_LINES = 2  # lines shown around a place outside the jitted function
# "... at path/file.py:12" inside a note (a pinned size names the line that read the size)
_AT_PLACE = re.compile(r"\bat (\S+\.py):(\d+)")


@dataclass
class Mark:
    """One thing marked at a line of source."""

    kind: str  # "break", "fallback", "specialisation", "pinned size"
    text: str
    entry: int | None = None  # the cache entry it belongs to, for the link


@dataclass
class SourceLine:
    number: int
    text: str
    marks: list[Mark] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"L{self.number}"


@dataclass
class SourceBlock:
    """Consecutive lines of one file: the jitted function, or an excerpt around a place elsewhere."""

    file: str
    label: str
    lines: list[SourceLine]
    key: str  # anchor prefix: lines are `{key}-L{n}`


def _split_place(where: str | None) -> tuple[str, int] | None:
    if not where:
        return None
    file, _, line = where.rpartition(":")
    return (file, int(line)) if file and line.isdigit() else None


def shown_path(file: str) -> str:
    """A file relative to the working directory when below it, else as it is."""
    try:
        relative = os.path.relpath(file)
    except ValueError:
        return file
    return file if relative.startswith("..") else relative


def function_span(file: str, first_line: int) -> tuple[int, int]:
    """(first, last) line of the function or class starting at `first_line` (decorators included),
    read from the file's syntax tree; a window of 40 lines when the tree cannot be read."""
    try:
        tree = ast.parse("".join(linecache.getlines(file)), filename=file)
    except (SyntaxError, ValueError):
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if first_line in (start, node.lineno):
                    return start, node.end_lineno or node.lineno
            elif isinstance(node, ast.Lambda) and node.lineno == first_line:
                return node.lineno, node.end_lineno or node.lineno
    return first_line, first_line + 40


def collect_marks(e: Explanation) -> dict[tuple[str, int], list[Mark]]:
    """Every place `e` names, with what happened there."""
    marks: dict[tuple[str, int], list[Mark]] = {}

    def add(place: tuple[str, int] | None, mark: Mark) -> None:
        if place is not None:
            marks.setdefault(place, []).append(mark)

    for reason in e.fallback_reasons:
        for part in reason.parts or (reason,):
            add(_split_place(part.where), Mark("fallback", f"[{part.kind.value}] {part.message}"))
    for n, g in enumerate(e.graphs):
        for b in g.breaks:
            add((b.filename, b.lineno), Mark("break", f"[{b.reason_kind.value}] {b.reason}", n))
        for value, where in g.specialised():
            add(_split_place(where), Mark("specialisation", value, n))
        for pin in g.size_pins:
            found = _AT_PLACE.search(pin)
            if found:
                add((found.group(1), int(found.group(2))), Mark("pinned size", pin, n))
    return marks


def source_blocks(e: Explanation, marks: dict[tuple[str, int], list[Mark]]) -> list[SourceBlock]:
    """The jitted function whole, then an excerpt around each marked place outside it."""
    blocks: list[SourceBlock] = []
    covered: set[tuple[str, int]] = set()
    if e.source is not None:
        file, first = e.source
        start, end = function_span(file, first)
        lines = [
            SourceLine(n, linecache.getline(file, n).rstrip("\n"), marks.get((file, n), []))
            for n in range(start, end + 1)
        ]
        if any(line.text for line in lines):
            blocks.append(SourceBlock(file, f"{shown_path(file)}:{start}", lines, "src0"))
            covered |= {(file, n) for n in range(start, end + 1)}
    for file, line in sorted(p for p in marks if p not in covered):
        if (file, line) in covered:
            continue
        numbers = range(max(1, line - CONTEXT_LINES), line + CONTEXT_LINES + 1)
        lines = [
            SourceLine(n, linecache.getline(file, n).rstrip("\n"), marks.get((file, n), []))
            for n in numbers
            if linecache.getline(file, n) or n == line
        ]
        blocks.append(SourceBlock(file, f"{shown_path(file)}:{line}", lines, f"src{len(blocks)}"))
        covered |= {(file, n) for n in numbers}
    return blocks


def page_model(e: Explanation) -> dict[str, Any]:
    """Everything the template shows, from `e`'s public fields."""
    marks = collect_marks(e)
    blocks = source_blocks(e, marks)
    anchors = {(b.file, line.number): f"{b.key}-{line.anchor}" for b in blocks for line in b.lines}
    by_kind = [
        {
            "kind": kind.value,
            "hint": reasons[0].hint,
            "items": [
                {
                    "what": r.what,
                    "where": shown_where(r.where),
                    "anchor": anchors.get(_split_place(r.where) or ("", 0)),
                    "message": r.message,
                }
                for reason in reasons
                for r in (reason.parts or (reason,))
            ],
        }
        for kind, reasons in e.by_kind().items()
    ]
    entries = []
    for n, g in enumerate(e.graphs):
        entries.append(
            {
                "index": n,
                "report": g,
                "breaks": [
                    {
                        "report": b,
                        "where": shown_where(f"{b.filename}:{b.lineno}"),
                        "anchor": anchors.get((b.filename, b.lineno)),
                    }
                    for b in g.breaks
                ],
                "specialised": [
                    {
                        "value": value,
                        "where": shown_where(where),
                        "anchor": anchors.get(_split_place(where) or ("", 0)),
                    }
                    for value, where in g.specialised()
                ],
                "size_pins": list(g.size_pins),
            }
        )
    return {
        "e": e,
        "title": f"jitlab.jit: {e.name}",
        "where": f"{shown_path(e.source[0])}:{e.source[1]}" if e.source else None,
        "hits": sum(g.hits for g in e.graphs),
        "miss_seconds": e.miss_seconds,
        "blocks": blocks,
        "mark_count": sum(len(m) for m in marks.values()),
        "by_kind": by_kind,
        "entries": entries,
        "miss_reasons": list(e.miss_reasons),  # the guard that failed at the misses, grouped
        "last_misses": [list(m) for m in e.last_misses],
        "eager_misses": e.eager_misses,
    }


def shown_where(where: str | None) -> str | None:
    place = _split_place(where)
    return f"{shown_path(place[0])}:{place[1]}" if place else where


def render_html(e: Explanation) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["seconds"] = _seconds
    return env.get_template(TEMPLATE).render(**page_model(e))


def _seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def write_html(e: Explanation, path: Path) -> Path:
    """Write the page to `path` (its folder must exist); a path that cannot be written is a UserError."""
    if path.is_dir():
        raise UserError(f"{path} is a folder: give a file name such as {path / 'explain.html'}")
    if not path.parent.exists():
        raise UserError(f"folder {path.parent} does not exist: create it or choose another path")
    try:
        path.write_text(render_html(e), encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror}; choose another path") from exc
    return path
