"""Pairing the cells of two runs: a cell is the same measurement when workload, backend, size,
parameters and the machine that measured it are equal.

Cells of different machines are paired only when asked (`across_machines`): their ratio mixes code
and hardware. Then each run must have measured each cell on one machine, or the pairing would be a
guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jitlab.errors import UserError
from jitlab.store import CellRecord
from jitlab.store.database import params_key
from jitlab.store.identity import machine_label, machine_labels

CellKey = tuple[str, str, int, str]


def cell_key(cell: CellRecord) -> CellKey:
    return (cell.workload, cell.backend, cell.size, params_key(cell.params))


@dataclass(frozen=True)
class Matching:
    pairs: tuple[tuple[CellRecord, CellRecord], ...]
    only_a: tuple[CellRecord, ...]
    only_b: tuple[CellRecord, ...]
    #: the cells that would pair if machines were ignored, when none pair as measured (0 otherwise)
    other_machine_pairs: int = 0


def _machine_key(cell: CellRecord) -> tuple[CellKey, str]:
    return (cell_key(cell), machine_label(cell.machine))


def _one_machine_each(cells: Sequence[CellRecord], run_id: int) -> None:
    seen: dict[CellKey, str] = {}
    for cell in cells:
        label = machine_label(cell.machine)
        if seen.setdefault(cell_key(cell), label) != label:
            raise UserError(
                f"run {run_id} measured {cell.workload} · {cell.backend} · n={cell.size} on several machines "
                f"({', '.join(machine_labels(c.machine for c in cells))}): --across-machines pairs runs that "
                "measured each cell on one machine"
            )


def match_cells(
    cells_a: Sequence[CellRecord], cells_b: Sequence[CellRecord], across_machines: bool = False
) -> Matching:
    """Pairs in A's order; cells present in one run only (on that machine) are returned apart."""
    if across_machines:
        if cells_a:
            _one_machine_each(cells_a, cells_a[0].run_id)
        if cells_b:
            _one_machine_each(cells_b, cells_b[0].run_id)
        key = cell_key
    else:
        key = _machine_key  # type: ignore[assignment]
    by_key_b = {key(c): c for c in cells_b}
    keys_a = {key(c) for c in cells_a}
    pairs = tuple((a, by_key_b[key(a)]) for a in cells_a if key(a) in by_key_b)
    only_a = tuple(a for a in cells_a if key(a) not in by_key_b)
    only_b = tuple(b for b in cells_b if key(b) not in keys_a)
    other = 0
    if not pairs and not across_machines:
        keys_b = {cell_key(c) for c in cells_b}
        other = sum(cell_key(a) in keys_b for a in cells_a)
    return Matching(pairs, only_a, only_b, other)
