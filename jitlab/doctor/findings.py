"""What the doctor found: one `Finding` per kind of problem and place in the user's code.

The same problem at the same line is one finding with a count (a `.item()` inside a loop that ran
1,000 times is one finding seen 1,000 times), so `FindingSet` aggregates by (kind, location) and
keeps the order in which problems were first seen.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

#: the kinds of finding, in the order the report shows them
KINDS = (
    "sync",
    "data-dependent-shape",
    "blocking-in-loop",
    "graph-break",
    "recompile",
    "compile-error",
)


@dataclass(frozen=True)
class Finding:
    """One problem: what kind, where in the user's code (`file:line`), what happened, what to do."""

    kind: str
    location: str
    detail: str
    suggestion: str
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def line(self) -> int | None:
        tail = self.location.rsplit(":", 1)[-1]
        return int(tail) if tail.isdigit() else None


@dataclass
class FindingSet:
    """Findings aggregated by (kind, location); the first detail and suggestion seen are kept."""

    _items: dict[tuple[str, str], Finding] = field(default_factory=dict)

    def add(self, finding: Finding) -> None:
        if finding.kind not in KINDS:
            raise ValueError(f"unknown finding kind {finding.kind!r}")
        key = (finding.kind, finding.location)
        seen = self._items.get(key)
        self._items[key] = finding if seen is None else replace(seen, count=seen.count + finding.count)

    def extend(self, findings: list[Finding]) -> None:
        for finding in findings:
            self.add(finding)

    def sorted(self) -> list[Finding]:
        """Grouped by kind (in `KINDS` order), first-seen order within a kind."""
        order = {kind: i for i, kind in enumerate(KINDS)}
        return sorted(self._items.values(), key=lambda f: order[f.kind])

    def __len__(self) -> int:
        return len(self._items)
