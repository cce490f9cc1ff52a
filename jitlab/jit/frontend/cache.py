"""Cache entries (guard + compiled graph + replay, one generated function each), checked in order.

The cache is bounded by `max_entries`. A long-running server sees inputs the entries serve and,
now and then, one they do not (a rare size, a new keyword). Capturing is much slower than running
eagerly, and the entries that hit are what makes the JIT worth having, so a full cache keeps its
entries: a call that misses them all runs eagerly, and the JIT stays on for the calls that hit.
Only when `STARVED_MISSES` calls in a row miss every entry (nothing is being served: a value that
changes on every call, such as a counter) does the callable fall back to eager for good, saying
which guards kept failing. A capture that cannot be cached also falls back for good, with why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jitlab.jit.entries.plans import BreakInfo, EntryPlan
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
    breaks: list[BreakInfo] = field(default_factory=list)  # in program order
    symbolic: list[str] = field(default_factory=list)  # inputs with symbolic sizes
    shape_note: str | None = None  # why sizes that changed stayed static
    plan: EntryPlan | None = None  # the plan it was built from (merged with another outcome's, branches.py)
    # its graphs change no tensor in place and it replays no effect: a call it fails can run again
    # eagerly without repeating anything the caller sees (failsafe.py)
    rerun_safe: bool = False
    miss_texts: dict[str, str] = field(default_factory=dict)  # names the failed guard of a miss (misses.py)
    size_pins: list[str] = field(default_factory=list)  # sizes the program pinned: guard, why, where


STARVED_MISSES = 64  # calls in a row that miss every entry of a full cache before eager for good


@dataclass
class Cache:
    max_entries: int = 8
    entries: list[CacheEntry] = field(default_factory=list)
    misses: int = 0
    eager_misses: int = 0  # calls that missed a full cache and ran eagerly, the JIT staying on
    misses_in_a_row: int = 0  # misses since the last call an entry served
    _hits_at_last_miss: int = -1
    disabled: str | None = None  # reason for falling back to eager for good
    fallbacks: list[Reason] = field(default_factory=list)  # each with its kind and, when known, its line

    def add(self, entry: CacheEntry) -> None:
        self.entries.append(entry)

    def full(self) -> bool:
        return len(self.entries) >= self.max_entries

    def note_miss(self) -> None:
        """Count a miss, and how many came in a row: the hit counters are read here, on the miss,
        so that the hit path counts nothing more."""
        hits = sum(entry.fn.hits[0] for entry in self.entries)
        if hits != self._hits_at_last_miss:
            self._hits_at_last_miss = hits
            self.misses_in_a_row = 0
        self.misses += 1
        self.misses_in_a_row += 1

    def starved(self) -> bool:
        """Full, and the last `STARVED_MISSES` calls all missed: nothing is being served."""
        return self.full() and self.misses_in_a_row >= STARVED_MISSES

    def disable(self, reason: Reason) -> None:
        """Fall back to eager execution for good, for `reason`."""
        self.disabled = reason.message
        self.fallbacks.append(reason)
