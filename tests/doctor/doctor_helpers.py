"""Helpers shared by the doctor's tests: where the fixture programs are and which line is which."""

from __future__ import annotations

from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent / "programs"


def program(name: str) -> str:
    return str(PROGRAMS / name)


def line_of(file: str, marker: str) -> int:
    """The line of `file` carrying the comment `# doctor: MARKER`."""
    for number, text in enumerate(Path(file).read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# doctor: {marker}"):
            return number
    raise AssertionError(f"no line marked {marker!r} in {file}")


def lines_of(findings, kind: str) -> list[int]:
    """The lines where a check saw `kind`, as the finding's own kind or as one of its views."""
    return sorted(f.line for f in findings if kind in f.kinds)


def view(finding, kind: str) -> str:
    """The detail of the finding's view of `kind` (its own detail when its cause is of that kind)."""
    if (finding.cause or finding.kind) == kind:
        return finding.detail
    (found,) = [v.detail for v in finding.views if v.kind == kind]
    return found
