"""Pairing the cells of two runs: a cell is the same measurement when workload, backend, size and
parameters are equal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jitlab.store import CellRecord
from jitlab.store.sqlite_store import params_key

CellKey = tuple[str, str, int, str]


def cell_key(cell: CellRecord) -> CellKey:
    return (cell.workload, cell.backend, cell.size, params_key(cell.params))


@dataclass(frozen=True)
class Matching:
    pairs: tuple[tuple[CellRecord, CellRecord], ...]
    only_a: tuple[CellRecord, ...]
    only_b: tuple[CellRecord, ...]


def match_cells(cells_a: Sequence[CellRecord], cells_b: Sequence[CellRecord]) -> Matching:
    """Pairs in A's order; cells present in one run only are returned apart."""
    by_key_b = {cell_key(c): c for c in cells_b}
    keys_a = {cell_key(c) for c in cells_a}
    pairs = tuple((a, by_key_b[cell_key(a)]) for a in cells_a if cell_key(a) in by_key_b)
    only_a = tuple(a for a in cells_a if cell_key(a) not in by_key_b)
    only_b = tuple(b for b in cells_b if cell_key(b) not in keys_a)
    return Matching(pairs, only_a, only_b)
