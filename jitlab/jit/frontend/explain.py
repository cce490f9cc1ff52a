"""The report `jit(...).explain()` returns: graphs, graph breaks, guards, speculations, effects and
fallbacks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jitlab.jit.reasons import Reason, ReasonKind


@dataclass(frozen=True)
class BreakReport:
    """A graph break of a cache entry: where the captured call is split, and why.

    `kind` is "call" (a call jitlab.jit cannot follow runs natively between two graphs) or "data"
    (Python decides on a value read from tensor data; the value is re-checked there). `reason_kind`
    is what kind of obstacle the break is (jitlab.jit.reasons), as the stage that made the break
    said. `deopts` counts the calls whose checks after the break failed, so that they finished from
    the break by interpreting the rest of the program."""

    kind: str
    reason: str
    reason_kind: ReasonKind
    filename: str
    lineno: int
    function: str
    deopts: int = 0

    @property
    def where(self) -> str:
        return f"{self.filename}:{self.lineno} ({self.function})"

    def __str__(self) -> str:
        return f"graph break at {self.where}: {self.reason}"


@dataclass(frozen=True)
class GraphReport:
    """One cache entry: the graphs a call through it runs (`graphs`, split at `breaks`), its guards,
    re-checked data values, replayed effects, and how many calls it served whole (`hits`)."""

    node_count: int
    op_count: int
    guards: tuple[str, ...]
    speculations: tuple[str, ...]
    effects: tuple[str, ...]
    hits: int
    code: str
    backend_note: str | None = None
    notes: tuple[str, ...] = ()  # how parts of the call were captured (autograd Functions, hooks...)
    graphs: int = 1
    breaks: tuple[BreakReport, ...] = ()
    symbolic_sizes: tuple[str, ...] = ()  # inputs with symbolic sizes, e.g. "args[0] (*, 8)"
    shape_note: str | None = None  # why sizes that changed since an earlier capture stayed static
    # values re-checked after the graph whose other outcome raises (a distribution's validation): no
    # specialisation, since every call that does not raise is served by the entry
    checks: tuple[str, ...] = ()
    # one note per size the program pinned although it was symbolic: the guard over the inputs'
    # sizes, what read the size, and the line ("kwargs['x'].size()[1] == 7: handed to range() at f.py:3")
    size_pins: tuple[str, ...] = ()
    # the user's file:line that computed each value of `speculations` (None where unknown)
    speculation_sites: tuple[str | None, ...] = ()

    @property
    def deopts(self) -> int:
        return sum(b.deopts for b in self.breaks)

    def specialised(self) -> tuple[tuple[str, str | None], ...]:
        """(value, file:line or None) for each value the entry is specialised on."""
        sites = self.speculation_sites + (None,) * (len(self.speculations) - len(self.speculation_sites))
        return tuple(zip(self.speculations, sites))


@dataclass(frozen=True)
class Explanation:
    """What the JIT did for one callable. `graphs` has one report per cache entry; `fallback_reasons`
    one `Reason` per fallback to eager (its kind, message and, when known, the file:line where its
    first problem was met)."""

    name: str
    graphs: tuple[GraphReport, ...]
    captures: int
    misses: int
    fallback_reasons: tuple[Reason, ...] = ()
    disabled: str | None = None
    # why calls missed: the first failed guard of each entry, grouped ("3 misses: entry 0: ..."),
    # the most frequent first; and the last misses one by one (one line per entry each)
    miss_reasons: tuple[str, ...] = ()
    last_misses: tuple[tuple[str, ...], ...] = ()
    eager_misses: int = 0  # calls that missed a full cache and ran eagerly, the entries kept
    miss_seconds: float = 0.0  # time in the calls that missed: capturing, compiling, running them
    source: tuple[str, int] | None = None  # (file, first line) of the jitted function

    def html(self, path: str | Path) -> Path:
        """Write a browsable HTML page of this explanation (entries, guards, graph code, the source
        with every break, fallback and specialisation at its line, misses, hits) and return its path."""
        from jitlab.jit.frontend.explain_html import write_html

        return write_html(self, Path(path))

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """The messages of the fallbacks to eager."""
        return tuple(r.message for r in self.fallback_reasons)

    @property
    def fallback_sites(self) -> tuple[tuple[str, str], ...]:
        """(fallback, file:line of the code where its first problem was met), for those with a place."""
        return tuple(dict((r.message, r.where) for r in self.fallback_reasons if r.where is not None).items())

    @property
    def graph_count(self) -> int:
        """Cache entries (each one or more graphs)."""
        return len(self.graphs)

    @property
    def graph_breaks(self) -> tuple[BreakReport, ...]:
        """Every graph break of every cache entry, in program order per entry."""
        return tuple(b for g in self.graphs for b in g.breaks)

    @property
    def graphs_per_call(self) -> int:
        """Graphs one call runs: the most of any cache entry (0 when nothing is cached)."""
        return max((g.graphs for g in self.graphs), default=0)

    @property
    def deopts(self) -> int:
        return sum(g.deopts for g in self.graphs)

    @property
    def breaks(self) -> tuple[str, ...]:
        """Reasons the program was not captured as one cached graph: fallbacks, graph breaks with
        their lines, and data values a graph is specialised on (re-checked on every call)."""
        out = list(self.fallbacks)
        seen = set()
        for b in self.graph_breaks:
            text = str(b)
            if text not in seen:
                seen.add(text)
                out.append(text)
        for g in self.graphs:
            if not g.breaks:
                out += [f"specialised on {s}" for s in g.speculations]
        return tuple(out)

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """The reasons of `breaks`, structured: kind, message, the user's file:line, hint."""
        out = list(self.fallback_reasons)
        seen = set()
        for b in self.graph_breaks:
            if str(b) not in seen:
                seen.add(str(b))
                out.append(Reason(b.reason_kind, b.reason, f"{b.filename}:{b.lineno}", "graph break"))
        for g in self.graphs:
            if not g.breaks:
                out += [
                    Reason(ReasonKind.DATA_DEPENDENT, s, at, "specialisation") for s, at in g.specialised()
                ]
        return tuple(out)

    def by_kind(self) -> dict[ReasonKind, tuple[Reason, ...]]:
        """`reasons` grouped by kind, the most frequent kind first."""
        groups: dict[ReasonKind, list[Reason]] = {}
        for reason in self.reasons:
            groups.setdefault(reason.kind, []).append(reason)
        ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
        return {kind: tuple(reasons) for kind, reasons in ordered}

    def __str__(self) -> str:
        lines = [f"jitlab.jit explain: {self.name}"]
        lines.append(
            f"  captures: {self.captures}, guard misses: {self.misses}, cache entries: {self.graph_count}, "
            f"graphs per call: {self.graphs_per_call}, graph breaks: {len(self.graph_breaks)}, "
            f"calls resumed from a break: {self.deopts}"
        )
        if self.disabled:
            lines.append(f"  FALLBACK to eager for good: {self.disabled}")
        if self.eager_misses:
            lines.append(f"  calls that missed the full cache and ran eagerly: {self.eager_misses}")
        if self.miss_reasons:
            lines.append("  why calls missed (the first failed guard of each entry):")
            lines += [f"    {text}" for text in self.miss_reasons]
        for n, g in enumerate(self.graphs):
            lines.append(
                f"  entry {n}: {g.graphs} graph(s), {g.op_count} ops, {g.node_count} nodes, {g.hits} hits"
            )
            for b in g.breaks:
                lines.append(f"    {b} [{b.kind}; {b.deopts} resumed]")
            if g.symbolic_sizes:
                lines.append(f"    symbolic sizes (*): {', '.join(g.symbolic_sizes)}")
            if g.shape_note:
                lines.append(f"    static sizes: {g.shape_note}")
            for pin in g.size_pins:
                lines.append(f"    size pinned: {pin}")
            if g.backend_note:
                lines.append(f"    backend: {g.backend_note}")
            lines.append(f"    guards ({len(g.guards)}):")
            lines += [f"      {text}" for text in g.guards]
            for s in g.speculations:
                lines.append(f"    speculation (re-checked after the graph): {s}")
            for s in g.checks:
                lines.append(f"    check (re-checked after the graph, the other outcome raises): {s}")
            for e in g.effects:
                lines.append(f"    side effect replayed: {e}")
            for note in g.notes:
                lines.append(f"    note: {note}")
        for reason in self.fallbacks:
            lines.append(f"  fallback: {reason}")
        groups = self.by_kind()
        if groups:
            lines.append("  why not one graph, by kind:")
        for kind, reasons in groups.items():
            lines.append(f"    {kind.value} ({len(reasons)}): {reasons[0].hint}")
            for reason in reasons:
                at = f" at {reason.where}" if reason.where else ""
                lines.append(f"      {reason.what}{at}: {reason.message}")
        return "\n".join(lines)
