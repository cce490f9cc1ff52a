"""What the doctor found: one `Finding` per line of the user's code, naming the root cause there.

The checks each see a problem from their own side: a `nonzero` is a synchronisation (the host waits
for the size), a data-dependent shape, a graph break for torch.compile and a specialisation or a
break for jitlab.jit. Reported one by one, the same line came back three or four times. So the
checks' findings are collected in a `FindingSet` (the same problem at the same line is one finding
with a count: a `.item()` inside a loop that ran 1,000 times is seen 1,000 times), then
`grouped()` makes one finding per line: its text names the cause (the operation at that line), its
kind is the most severe kind seen there, and what the other checks saw are its `views`.
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
    "jit-break",
    "recompile",
    "compile-error",
)

#: which check's text names the cause when several saw one line: the operation first (a shape
#: operator, a host read), then what a compiler made of it
CAUSE_ORDER = ("data-dependent-shape", "sync", "graph-break", "jit-break", "recompile", "compile-error")
#: the kind a grouped finding is filed under: the most severe one seen at its line
KIND_ORDER = (
    "compile-error",
    "blocking-in-loop",
    "data-dependent-shape",
    "graph-break",
    "jit-break",
    "recompile",
    "sync",
)
#: the kinds whose count is how many times the line ran in one call (the others count places)
COUNTING = ("sync", "data-dependent-shape", "blocking-in-loop")
#: how a view is labelled in the report
VIEW_LABELS = {
    "sync": "sync",
    "data-dependent-shape": "shape",
    "blocking-in-loop": "loop",
    "graph-break": "torch.compile",
    "jit-break": "jitlab.jit",
    "recompile": "recompile",
    "compile-error": "torch.compile",
}


@dataclass(frozen=True)
class View:
    """What one check saw at a finding's line, besides the cause."""

    kind: str
    detail: str

    @property
    def label(self) -> str:
        return VIEW_LABELS.get(self.kind, self.kind)


@dataclass(frozen=True)
class Finding:
    """One problem: what kind, where in the user's code (`file:line`), what happened, what to do,
    and (after grouping) what the other checks saw at the same line."""

    kind: str
    location: str
    detail: str
    suggestion: str
    count: int = 1
    views: tuple[View, ...] = ()
    #: the kind of the check whose text `detail` is (the cause), when it is not `kind`: a print in a
    #: loop is a `blocking-in-loop` finding whose cause is a `sync`
    cause: str = ""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["cause"] = self.cause or self.kind
        return data

    @property
    def line(self) -> int | None:
        tail = self.location.rsplit(":", 1)[-1]
        return int(tail) if tail.isdigit() else None

    @property
    def kinds(self) -> tuple[str, ...]:
        """Its own kind and those of its views: `--fail-on graph-break` fails on a nonzero line
        whose torch.compile view is a graph break."""
        seen = [self.kind, self.cause or self.kind, *(v.kind for v in self.views)]
        return tuple(dict.fromkeys(seen))


def _sort_key(location: str) -> tuple[str, int]:
    path, _, line = location.rpartition(":")
    return (path, int(line)) if line.isdigit() else (location, 0)


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

    def grouped(self) -> list[Finding]:
        """One finding per location, in file and line order (see the module's docstring)."""
        by_place: dict[str, list[Finding]] = {}
        for finding in self._items.values():
            by_place.setdefault(finding.location, []).append(finding)
        return [merge_place(found) for _, found in sorted(by_place.items(), key=lambda kv: _sort_key(kv[0]))]

    def __len__(self) -> int:
        return len(self._items)


def merge_place(found: list[Finding]) -> Finding:
    """One finding for the findings of one line: the cause's text, the most severe kind, the
    suggestion that goes with that kind, the others as views."""
    if len(found) == 1:
        return found[0]
    cause = min(found, key=lambda f: CAUSE_ORDER.index(f.kind) if f.kind in CAUSE_ORDER else len(CAUSE_ORDER))
    filed = min(found, key=lambda f: KIND_ORDER.index(f.kind))
    views = tuple(View(f.kind, f.detail) for f in found if f is not cause)
    return Finding(
        kind=filed.kind,
        location=cause.location,
        detail=cause.detail,
        suggestion=filed.suggestion,
        # how many times the line ran in one call, as the checks that watch a call counted it
        count=max((f.count for f in found if f.kind in COUNTING), default=1),
        views=views,
        cause=cause.kind if cause.kind != filed.kind else "",
    )
