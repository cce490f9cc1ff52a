"""Turning a user's request (workloads, backends, sizes) into the list of cells to measure, and
running them one by one into the store."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jitlab.backends import backend_names, get_backend
from jitlab.backends.base import cpu_count
from jitlab.engine.runner import execute_cell
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.errors import UserError
from jitlab.store import CellRecord, Store
from jitlab.store.sqlite_store import params_key
from jitlab.workloads.api import Workload


def parse_size(text: str) -> int:
    """'1e6', '1000000' and '10**6' all mean one million; anything else is an error."""
    raw = text.strip().replace("_", "")
    try:
        if "**" in raw:
            base, exponent = raw.split("**", 1)
            value: float = int(base) ** int(exponent)
        elif any(c in raw for c in ".eE"):
            value = float(raw)
        else:
            value = int(raw)
    except ValueError:
        raise UserError(f"size {text!r} is not a positive integer: write e.g. 1000000 or 1e6") from None
    if value != int(value) or value < 1:
        raise UserError(f"size {text!r} is not a positive integer: write e.g. 1000000 or 1e6")
    return int(value)


def parse_sizes(text: str | None) -> list[int] | None:
    if text is None:
        return None
    sizes = [parse_size(part) for part in text.split(",") if part.strip()]
    if not sizes:
        raise UserError("--sizes is empty: give sizes separated by commas, e.g. 1e4,1e6")
    return sizes


def parse_backends(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise UserError("--backends is empty: give backend names separated by commas, e.g. numpy,jax")
    for name in names:
        get_backend(name)  # raises UserError naming the known backends
    return names


@dataclass(frozen=True)
class PlannedCell:
    spec: CellSpec
    #: set when the cell cannot run at all (no implementation, framework not installed)
    unavailable_reason: str | None = None


def plan_cells(
    workloads: Sequence[Workload],
    backends: Sequence[str] | None,
    sizes: Sequence[int] | None,
    threads: int | None,
    policy: TimingPolicy,
    params: dict[str, Any] | None = None,
) -> list[PlannedCell]:
    """Every (workload, backend, size) cell, in backend-major order so the table fills by rows."""
    threads = threads or cpu_count()
    cells: list[PlannedCell] = []
    for workload in workloads:
        implemented = [b for b in backend_names() if b in workload.implementations]
        defaults = workload.default_backends
        chosen = list(backends) if backends else [b for b in implemented if not defaults or b in defaults]
        for backend_name in chosen:
            backend = get_backend(backend_name)
            reason = None
            if backend_name not in workload.implementations:
                reason = f"workload {workload.name!r} has no {backend_name} implementation"
            elif not backend.is_available():
                reason = f"{backend_name} is not installed: {backend.install_hint}"
            for size, swept in itertools.product(
                sizes or workload.sizes_for(backend_name), sweep_points(workload)
            ):
                if not workload.includes(backend_name, int(size), swept):
                    continue
                spec = CellSpec(
                    workload=workload.name,
                    backend=backend_name,
                    size=int(size),
                    params={**swept, **(params or {})},
                    source_file=workload.source_file,
                    threads=threads,
                    policy=policy,
                )
                cells.append(PlannedCell(spec, reason))
    return cells


def sweep_points(workload: Workload) -> list[dict[str, Any]]:
    """Every combination of the workload's swept parameters ([{}] when it sweeps nothing)."""
    names = list(workload.sweep)
    return [dict(zip(names, values)) for values in itertools.product(*(workload.sweep[n] for n in names))]


def missing_cells(store: Store, run_id: int, planned: Sequence[PlannedCell]) -> list[PlannedCell]:
    # failed, timed-out and unavailable cells are measured again: the cause may be fixed now
    done = {(c.workload, c.backend, c.size, params_key(c.params)) for c in store.cells(run_id) if c.ok}
    return [p for p in planned if (*p.spec.key, params_key(p.spec.params)) not in done]


def execute_cells(
    store: Store,
    run_id: int,
    planned: Sequence[PlannedCell],
    timeout_s: float,
    on_start: Callable[[CellSpec], None] = lambda spec: None,
    on_done: Callable[[CellRecord], None] = lambda record: None,
) -> list[CellRecord]:
    """Measure each cell in its own worker and commit it at once; Ctrl-C keeps what finished."""
    records = []
    for cell in planned:
        spec = cell.spec
        on_start(spec)
        if cell.unavailable_reason:
            result: dict[str, Any] = {"status": "unavailable", "reason": cell.unavailable_reason}
        else:
            result = execute_cell(spec, timeout_s)
        record = store.save_cell(run_id, spec.workload, spec.backend, spec.size, spec.params, result)
        records.append(record)
        on_done(record)
    return records
