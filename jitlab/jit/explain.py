"""The report `jit(...).explain()` returns: graphs, guards, speculations, effects and fallbacks."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GraphReport:
    node_count: int
    op_count: int
    guards: tuple[str, ...]
    speculations: tuple[str, ...]
    effects: tuple[str, ...]
    hits: int
    code: str
    backend_note: str | None = None
    notes: tuple[str, ...] = ()  # how parts of the call were captured (autograd Functions, hooks...)


@dataclass(frozen=True)
class Explanation:
    """What the JIT did for one callable."""

    name: str
    graphs: tuple[GraphReport, ...]
    captures: int
    misses: int
    fallbacks: tuple[str, ...] = field(default_factory=tuple)
    disabled: str | None = None

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def breaks(self) -> tuple[str, ...]:
        """Reasons the program was not captured as one cached graph (fallbacks and specialisations)."""
        out = list(self.fallbacks)
        for g in self.graphs:
            out += [f"specialised on {s}" for s in g.speculations]
        return tuple(out)

    def __str__(self) -> str:
        lines = [f"jitlab.jit explain: {self.name}"]
        lines.append(
            f"  captures: {self.captures}, guard misses: {self.misses}, graphs cached: {self.graph_count}"
        )
        if self.disabled:
            lines.append(f"  FALLBACK to eager for good: {self.disabled}")
        for n, g in enumerate(self.graphs):
            lines.append(f"  graph {n}: {g.op_count} ops, {g.node_count} nodes, {g.hits} hits")
            if g.backend_note:
                lines.append(f"    backend: {g.backend_note}")
            lines.append(f"    guards ({len(g.guards)}):")
            lines += [f"      {text}" for text in g.guards]
            for s in g.speculations:
                lines.append(f"    speculation (re-checked after the graph): {s}")
            for e in g.effects:
                lines.append(f"    side effect replayed: {e}")
            for note in g.notes:
                lines.append(f"    note: {note}")
        for reason in self.fallbacks:
            lines.append(f"  fallback: {reason}")
        return "\n".join(lines)
