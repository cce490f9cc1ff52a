"""Cache entries (guard + compiled graph + replay, one generated function each), checked in order.

The cache is bounded: after `max_entries` captures for one callable, or as soon as a capture cannot be
cached, the callable falls back to eager execution for good and remembers why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jitlab.jit.reasons import Reason


@dataclass
class CacheEntry:
    """One specialisation of the program."""

    fn: Callable[[tuple, dict], Any]
    source: str
    guards: list[str]
    graph_code: str
    node_count: int
    op_count: int
    speculations: list[str] = field(default_factory=list)
    speculation_sites: list[str | None] = field(default_factory=list)  # file:line of each, None: unknown
    checks: list[str] = field(default_factory=list)  # re-checked values whose other outcome raises
    effects: list[str] = field(default_factory=list)
    backend_note: str | None = None
    notes: list[str] = field(default_factory=list)
    graphs: int = 1  # graphs one call through this entry runs (more than one: it has graph breaks)
    breaks: list[Any] = field(default_factory=list)  # codegen.BreakInfo, in program order
    symbolic: list[str] = field(default_factory=list)  # inputs with symbolic sizes
    shape_note: str | None = None  # why sizes that changed stayed static
    plan: Any = None  # the codegen.EntryPlan it was built from (merged with another outcome's, branches.py)
    # its graphs change no tensor in place and it replays no effect: a call it fails can run again
    # eagerly without repeating anything the caller sees (failsafe.py)
    rerun_safe: bool = False


@dataclass
class Cache:
    max_entries: int = 8
    entries: list[CacheEntry] = field(default_factory=list)
    misses: int = 0
    disabled: str | None = None  # reason for falling back to eager for good
    fallbacks: list[Reason] = field(default_factory=list)  # each with its kind and, when known, its line

    def add(self, entry: CacheEntry) -> None:
        self.entries.append(entry)

    def full(self) -> bool:
        return len(self.entries) >= self.max_entries

    def disable(self, reason: Reason) -> None:
        """Fall back to eager execution for good, for `reason`."""
        self.disabled = reason.message
        self.fallbacks.append(reason)
