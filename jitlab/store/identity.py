"""Which machine measured a cell, as one label to group and match cells by.

A cell's machine is the metadata recorded where it ran (see `jitlab.store.machine.machine_info`).
Its label is the machine's name when it has one (a Ray node's `machine` label, or a name the user
gave), else the hardware fingerprint, so runs of one machine before and after names existed still
match. Two cells are measurements of the same machine exactly when their labels are equal.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from jitlab.store.machine import machine_fingerprint


def machine_label(info: dict[str, Any] | None) -> str:
    if not info:
        return "?"
    return str(info.get("name") or machine_fingerprint(info))


def machine_labels(machines: Iterable[dict[str, Any]]) -> list[str]:
    """Distinct labels in first-seen order."""
    return list(dict.fromkeys(machine_label(m) for m in machines))


# Cells are grouped by machine in one place: `machine_naming` says what every table, figure, note and
# export calls a cell's machine, and `by_machine` groups by that name.


def machine_naming(cells: Collection[Any]) -> Callable[[Any], str]:
    """What a cell of `cells` (anything with a `machine`) is filed under: its machine's label when
    several machines measured `cells`, "" when one did, so callers name machines only where there
    are several (a label is never "")."""
    several = len(machine_labels(c.machine for c in cells)) > 1
    return (lambda cell: machine_label(cell.machine)) if several else (lambda cell: "")


def by_machine(cells: Iterable[Any]) -> dict[str, list[Any]]:
    """Cells (anything with a `machine`) per machine, named by `machine_naming`, in first-seen order:
    one entry keyed "" when a single machine measured them all (or there are none)."""
    cells = list(cells)
    name = machine_naming(cells)
    groups: dict[str, list[Any]] = {"": []} if not cells else {}
    for cell in cells:
        groups.setdefault(name(cell), []).append(cell)
    return groups
