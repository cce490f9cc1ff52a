"""Turning a user's request (workloads, backends, sizes) into the list of cells to measure, and
running them into the store in interleaved rounds (`jitlab.engine.rounds`), here or on a cluster."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from jitlab.backends import backend_names, get_backend
from jitlab.backends.base import cpu_count
from jitlab.engine.dispatch import LocalDispatcher
from jitlab.engine.jobs import Job, Node
from jitlab.engine.rounds import CellState, MakeJob, RoundsProgress, local_job, run_rounds
from jitlab.engine.runner import remove_scratch
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.errors import UserError
from jitlab.process_result import CellResult
from jitlab.store import CellRecord, Store
from jitlab.store.database import params_key
from jitlab.store.identity import machine_label
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
    #: the run this cell is stored in, when not the one being measured (the other build of
    #: `jitlab run --against`, stored as a run of its own)
    run_id: int | None = None
    #: the index in the plan of the same cell of the other build: both are measured side by side in
    #: every round (`jitlab.engine.pairs`)
    partner: int | None = None


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


def paired_plan(new: Sequence[PlannedCell], old: Sequence[PlannedCell], old_run_id: int) -> list[PlannedCell]:
    """The cells of two builds (`jitlab run NEW --against OLD`): each cell of NEW right after the
    same cell of OLD, partners of each other, OLD's stored in run `old_run_id`. A cell only NEW has is
    measured alone; one only OLD has is not measured (the run is about NEW)."""
    olds = {(*c.spec.key, params_key(c.spec.params)): c for c in old}
    out: list[PlannedCell] = []
    for cell in new:
        match = olds.pop((*cell.spec.key, params_key(cell.spec.params)), None)
        if match is None:
            out.append(cell)
            continue
        out.append(replace(match, run_id=old_run_id, partner=len(out) + 1))
        out.append(replace(cell, partner=len(out) - 1))
    return out


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
    # failed, timed-out and unavailable cells are measured again: the cause may be fixed now, and
    # so are cells an interrupted run stored before their last round
    ok = [c for c in store.cells(run_id) if c.ok and not is_partial(c)]
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


def unavailable_result(reason: str) -> CellResult:
    return CellResult(status="unavailable", reason=reason)


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
    on_progress: Callable[[RoundsProgress], None] | None = None,
    on_result: Callable[[CellRecord, bool], None] | None = None,
    shuffle: bool = True,
) -> list[CellRecord]:
    """Measure the cells in interleaved rounds (`jitlab.engine.rounds`), committing each cell after
    every process it gets; Ctrl-C keeps what was stored. Locally the processes run one after
    another; on a `cluster`, each node runs its own rounds, side by side. `on_done` hears each cell
    once, when it is final; `on_result` after every process (`final` or not); `on_start_at` which
    node starts which cell; `on_plan` how many cells there are; `on_progress` the rounds' progress;
    `shuffle=False` keeps the plan's order in every round (`jitlab.engine.rounds.round_order`)."""
    records: dict[int, CellRecord] = {}
    run_of = {f"cell-{i}": cell.run_id or run_id for i, cell in enumerate(planned)}

    def save(
        spec: CellSpec,
        result: CellResult,
        machine: dict[str, Any] | None,
        final: bool,
        into: int = run_id,
    ) -> None:
        # the run's one store write per measured process (a cell replaces its earlier attempt)
        record = store.save_cell(into, spec.workload, spec.backend, spec.size, spec.params, result, machine)
        if on_result:
            on_result(record, final)
        if final:
            records[len(records)] = record
            on_done(record)

    token = uuid.uuid4().hex[:12]
    if cluster is None:
        states, unavailable = _local_states(planned)
        _link_partners(states, planned)
        dispatcher: Any = LocalDispatcher()
        make_job = local_job(timeout_s, token)
    else:
        states, unavailable, make_job = _cluster_states(cluster, store, run_id, planned, timeout_s, token)
        dispatcher = cluster.dispatcher
    if on_plan:
        on_plan(len(states) + len(unavailable))
    for spec, result, machine, into in unavailable:
        save(spec, result, machine, True, into or run_id)

    def started(state: CellState, node: Node, index: int) -> None:
        on_start(state.spec)
        if on_start_at:
            on_start_at(state.spec, node.name)

    def saved(state: CellState, result: CellResult, final: bool) -> None:
        machine = cluster.machines[state.node.node_id] if cluster is not None and state.node else None
        save(state.spec, result, machine, final, run_of.get(state.scratch_key, run_id))

    try:
        run_rounds(
            states,
            dispatcher,
            make_job,
            saved,
            seed=f"{store_uuid(store, run_id)}",
            on_start=started,
            on_progress=on_progress or (lambda progress: None),
            shuffle=shuffle,
        )
    finally:
        _remove_scratch(cluster, token)
    return list(records.values())


def store_uuid(store: Store, run_id: int) -> str:
    """The run's UUID: the seed of its rounds' order (the same when the run is resumed)."""
    return store.run(run_id).uuid


def _remove_scratch(cluster: Cluster | None, token: str) -> None:
    """Remove the run's cell folders here, or on every node through the dispatcher (a node that is
    gone keeps its folder in its temporary directory: its outcome is an error, not raised)."""
    if cluster is None:
        remove_scratch(token)
        return
    jobs = [Job(None, remove_scratch, (token,), node, cpus=0) for node in cluster.nodes]
    cluster.dispatcher.run(jobs, lambda job, node: None, lambda outcome: None)


def _local_states(
    planned: Sequence[PlannedCell],
) -> tuple[list[CellState], list[tuple[CellSpec, dict[str, Any], None, int | None]]]:
    states, unavailable = [], []
    for i, cell in enumerate(planned):
        if cell.unavailable_reason:
            unavailable.append((cell.spec, unavailable_result(cell.unavailable_reason), None, cell.run_id))
        else:
            states.append(CellState(cell.spec, None, f"cell-{i}"))
    return states, unavailable


def _link_partners(states: Sequence[CellState], planned: Sequence[PlannedCell]) -> None:
    """Give each state the state of its partner cell (both measurable), for the paired rounds."""
    by_key = {state.scratch_key: state for state in states}
    for i, cell in enumerate(planned):
        state, other = by_key.get(f"cell-{i}"), by_key.get(f"cell-{cell.partner}")
        if cell.partner is not None and state is not None and other is not None:
            state.partner = other


def _cluster_states(
    cluster: Cluster, store: Store, run_id: int, planned: Sequence[PlannedCell], timeout_s: float, token: str
) -> tuple[
    list[CellState], list[tuple[CellSpec, dict[str, Any], dict[str, Any] | None, int | None]], MakeJob
]:
    """A state per cell and node that has to measure it (skipping nodes that measured a cell already,
    on resume), the cells unavailable everywhere (recorded without running), and how to make the
    Ray job of one process of a cell."""
    from jitlab.engine.node_tasks import measure_process_on_node, read_files

    threads = cluster.threads_for(cluster.threads)
    done = {
        (c.workload, c.backend, c.size, params_key(c.params), machine_label(c.machine))
        for c in store.cells(run_id)
        if c.ok and not is_partial(c)
    }
    shipped: dict[str | None, dict[str, str]] = {}
    states: list[CellState] = []
    requests: dict[int, tuple[float, float]] = {}
    unavailable = []
    for i, cell in enumerate(planned):
        spec = cell.spec
        key = (*spec.key, params_key(spec.params))
        if cell.unavailable_reason:  # no implementation: the same on every node, nothing to send
            for node in [None] if cluster.spread else cluster.nodes:
                machine = cluster.machines[node.node_id] if node else None
                unavailable.append((spec, unavailable_result(cell.unavailable_reason), machine, cell.run_id))
            continue
        if spec.source_file not in shipped:
            shipped[spec.source_file] = read_files([spec.source_file])

        def make(spec_json: dict[str, Any]) -> tuple[Any, tuple]:
            return measure_process_on_node, (spec_json,)

        for job in cluster.jobs_for_cell(key, spec.to_json(), spec.backend, threads, make):
            if job.node is not None and (*key, cluster.label(job.node)) in done:
                continue  # resumed: this node measured it already
            where = job.node.node_id[:12] if job.node else "any"
            state = CellState(CellSpec.from_json(job.args[0]), job.node, f"cell-{i}-{where}")
            requests[id(state)] = (job.cpus, job.gpus)
            states.append(state)

    def make_job(state: CellState, index: int, spec: CellSpec) -> Job:
        cpus, gpus = requests[id(state)]
        files = shipped[spec.source_file]
        args = (spec.to_json(), index, timeout_s, files, token, state.scratch_key)
        return Job(state, measure_process_on_node, args, state.node, cpus, gpus)

    return states, unavailable, make_job


def is_partial(cell: CellRecord) -> bool:
    """A cell stored before its last round (an interrupted run): `--resume` measures it again."""
    return cell.partial
