"""Turning a user's request (workloads, backends, sizes) into the list of cells to measure, and
running them one by one into the store."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jitlab.backends import backend_names, get_backend
from jitlab.backends.base import cpu_count
from jitlab.engine.dispatch import LocalDispatcher
from jitlab.engine.jobs import Job, Node, Outcome
from jitlab.engine.runner import execute_cell
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.errors import UserError
from jitlab.store import CellRecord, Store
from jitlab.store.identity import machine_label
from jitlab.store.sqlite_store import params_key
from jitlab.workloads.api import Workload

if TYPE_CHECKING:
    from jitlab.engine.cluster import Cluster


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
    check_installed: bool = True,
) -> list[PlannedCell]:
    """Every (workload, backend, size) cell, in backend-major order so the table fills by rows.

    `check_installed=False` leaves it to the machine that measures a cell to say whether its
    framework is installed (on a cluster, each node answers for itself)."""
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
            elif check_installed and not backend.is_available():
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


def missing_cells(
    store: Store, run_id: int, planned: Sequence[PlannedCell], cluster: Cluster | None = None
) -> list[PlannedCell]:
    """The planned cells without a successful measurement. On a cluster where every node measures
    every cell, a cell counts as missing when any selected node lacks it (the nodes that have it
    keep their measurement: `execute_cells` gets `only_on`)."""
    # failed, timed-out and unavailable cells are measured again: the cause may be fixed now
    ok = [c for c in store.cells(run_id) if c.ok]
    if cluster is None or cluster.spread:
        done = {(c.workload, c.backend, c.size, params_key(c.params)) for c in ok}
        return [p for p in planned if (*p.spec.key, params_key(p.spec.params)) not in done]
    labels = {cluster.label(node) for node in cluster.nodes}
    done_on: dict[tuple, set[str]] = {}
    for c in ok:
        done_on.setdefault((c.workload, c.backend, c.size, params_key(c.params)), set()).add(
            machine_label(c.machine)
        )
    return [p for p in planned if not labels <= done_on.get((*p.spec.key, params_key(p.spec.params)), set())]


def unavailable_result(reason: str) -> dict[str, Any]:
    return {"status": "unavailable", "reason": reason}


def execute_cells(
    store: Store,
    run_id: int,
    planned: Sequence[PlannedCell],
    timeout_s: float,
    on_start: Callable[[CellSpec], None] = lambda spec: None,
    on_done: Callable[[CellRecord], None] = lambda record: None,
    cluster: Cluster | None = None,
    on_start_at: Callable[[CellSpec, str], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
) -> list[CellRecord]:
    """Measure each cell in its own worker and commit it as soon as it finishes; Ctrl-C keeps what
    finished. Locally the cells run one after another; on a `cluster`, on its nodes side by side.
    `on_start_at` hears which node starts which cell; `on_plan` how many measurements there are."""
    records: list[CellRecord] = []

    def save(spec: CellSpec, result: dict[str, Any], machine: dict[str, Any] | None = None) -> None:
        record = store.save_cell(run_id, spec.workload, spec.backend, spec.size, spec.params, result, machine)
        records.append(record)
        on_done(record)

    if cluster is None:
        jobs = [
            Job(
                cell.spec,
                unavailable_result if cell.unavailable_reason else execute_cell,
                (cell.unavailable_reason,) if cell.unavailable_reason else (cell.spec, timeout_s),
            )
            for cell in planned
        ]
        specs = {id(job): job.key for job in jobs}
        dispatcher: Any = LocalDispatcher()
    else:
        jobs, specs, unavailable = _cluster_jobs(cluster, store, run_id, planned, timeout_s)
        dispatcher = cluster.dispatcher
    if on_plan:
        on_plan(len(jobs) + (len(unavailable) if cluster else 0))
    if cluster is not None:
        for spec, result, machine in unavailable:
            save(spec, result, machine)

    def started(job: Job, node: Node) -> None:
        spec = specs[id(job)]
        on_start(spec)
        if on_start_at:
            on_start_at(spec, node.name)

    def finished(outcome: Outcome) -> None:
        spec = specs[id(outcome.job)]
        machine = None
        if cluster is not None and outcome.node is not None:
            machine = cluster.machines[outcome.node.node_id]
        result = outcome.value if outcome.error is None else {"status": "failed", "reason": outcome.error}
        save(spec, result, machine)

    dispatcher.run(jobs, started, finished)
    return records


def _cluster_jobs(
    cluster: Cluster, store: Store, run_id: int, planned: Sequence[PlannedCell], timeout_s: float
) -> tuple[list[Job], dict[int, CellSpec], list[tuple[CellSpec, dict[str, Any], dict[str, Any] | None]]]:
    """The Ray jobs for the planned cells (skipping nodes that measured a cell already, on resume),
    their specs by job, and the cells that are unavailable everywhere (recorded without running)."""
    from jitlab.engine.node_tasks import measure_cell_on_node, read_files

    threads = cluster.threads_for(cluster.threads)
    done = {
        (c.workload, c.backend, c.size, params_key(c.params), machine_label(c.machine))
        for c in store.cells(run_id)
        if c.ok
    }
    shipped: dict[str | None, dict[str, str]] = {}
    jobs: list[Job] = []
    specs: dict[int, CellSpec] = {}
    unavailable = []
    for cell in planned:
        spec = cell.spec
        key = (*spec.key, params_key(spec.params))
        if cell.unavailable_reason:  # no implementation: the same on every node, nothing to send
            for node in [None] if cluster.spread else cluster.nodes:
                machine = cluster.machines[node.node_id] if node else None
                unavailable.append((spec, unavailable_result(cell.unavailable_reason), machine))
            continue
        if spec.source_file not in shipped:
            shipped[spec.source_file] = read_files([spec.source_file])
        files = shipped[spec.source_file]

        def make(spec_json: dict[str, Any], files: dict[str, str] = files) -> tuple[Any, tuple]:
            return measure_cell_on_node, (spec_json, timeout_s, files)

        for job in cluster.jobs_for_cell(key, spec.to_json(), spec.backend, threads, make):
            if job.node is not None and (*key, cluster.label(job.node)) in done:
                continue  # resumed: this node measured it already
            specs[id(job)] = CellSpec.from_json(job.args[0])
            jobs.append(job)
    return jobs, specs, unavailable
