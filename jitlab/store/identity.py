"""Which machine measured a cell, as one label to group and match cells by.

A cell's machine is the metadata recorded where it ran (see `jitlab.store.machine.machine_info`).
Its label is the machine's name when it has one (a Ray node's `machine` label, or a name the user
gave), else the hardware fingerprint, so runs of one machine before and after names existed still
match. Two cells are measurements of the same machine exactly when their labels are equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jitlab.store.machine import machine_fingerprint


def machine_label(info: dict[str, Any] | None) -> str:
    if not info:
        return "?"
    return str(info.get("name") or machine_fingerprint(info))


def machine_labels(machines: Iterable[dict[str, Any]]) -> list[str]:
    """Distinct labels in first-seen order."""
    return list(dict.fromkeys(machine_label(m) for m in machines))


def by_machine(cells: Iterable[Any]) -> dict[str, list[Any]]:
    """Cells (anything with a `machine`) per machine label, in first-seen order; one entry keyed ""
    when a single machine measured them all, so callers name machines only where there are several."""
    groups: dict[str, list[Any]] = {}
    for cell in cells:
        groups.setdefault(machine_label(cell.machine), []).append(cell)
    if len(groups) <= 1:
        return {"": [c for group in groups.values() for c in group]}
    return groups
