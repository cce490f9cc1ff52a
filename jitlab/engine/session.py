"""What a `jitlab run` measures, decided before anything is measured: the timing policy from what was
asked, the stored run (or runs) the cells go into, and the cells left to measure, for a new run, a
resumed one, and two builds side by side (`--against`). The CLI parses options into a `RunRequest`
and prints; this module plans (a resumed run too: `run_to_resume`, the options it was stored with,
`jitlab.store.run_options.RunOptions`); `jitlab.engine.plan.execute_cells` measures.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jitlab.backends.base import cpu_count
from jitlab.engine import valgrind
from jitlab.engine.plan import PlannedCell, missing_cells, paired_plan, plan_cells
from jitlab.engine.spec import INSTRUCTIONS, WALL, TimingPolicy
from jitlab.errors import UserError
from jitlab.store import RunRecord, Store
from jitlab.store.run_options import RunOptions
from jitlab.workloads.api import Workload

#: worker processes per cell when --processes is not given
DEFAULT_PROCESSES = 3
DEFAULT_TARGET_CI_PCT = 2.0
#: what --fast changes (pyperf's word): one process per cell, a short budget, a looser target
FAST_PROCESSES = 1
FAST_BUDGET_S = 1.0
FAST_TARGET_CI_PCT = 5.0
#: `--against` without --processes: processes (rounds) added to a pair while its paired verdict is
#: undecided or its interval wider than the target, up to this many (`jitlab.engine.pairs`)
AGAINST_MAX_PROCESSES = 80
#: worker processes per cell when counting (counts repeat; two show that they do)
INSTRUCTION_PROCESSES = 2
#: the engine's sampling budget per cell when neither the user nor a workload gives one
DEFAULT_BUDGET_S = 5.0


@dataclass(frozen=True)
class RunRequest:
    """What `jitlab run` was asked to measure, parsed and checked (None: the default)."""

    target: str
    workloads: tuple[Workload, ...]
    backends: tuple[str, ...] | None = None
    sizes: tuple[int, ...] | None = None
    threads: int | None = None
    timeout_s: float = 600.0
    budget_s: float | None = None
    target_ci_pct: float | None = None
    fast: bool = False
    processes: int | None = None
    #: `--processes N..MAX`: MAX (0: no processes added)
    max_processes: int = 0
    full: bool = False
    flush_l2: bool = False
    measure: str = WALL
    #: `--against`: the other build's file and its workloads of the same names
    against: str | None = None
    against_workloads: tuple[Workload, ...] = ()

    def policy(self) -> TimingPolicy:
        """The timing policy: the options given, else the defaults (shorter with --fast, the
        shortest budget a workload asks for, two processes when counting instructions)."""
        budget = self.budget_s
        if budget is None:
            budget = min(
                (w.default_budget_s for w in self.workloads if w.default_budget_s), default=DEFAULT_BUDGET_S
            )
            budget = min(budget, FAST_BUDGET_S) if self.fast else budget
        default_processes = (
            INSTRUCTION_PROCESSES
            if self.measure == INSTRUCTIONS
            else FAST_PROCESSES
            if self.fast
            else DEFAULT_PROCESSES
        )
        target = self.target_ci_pct or (FAST_TARGET_CI_PCT if self.fast else DEFAULT_TARGET_CI_PCT)
        return TimingPolicy(
            budget_s=budget,
            target_ci=target / 100,
            max_processes=self.max_processes or self._against_max(),
            processes=self.processes or default_processes,
            flush_l2=self.flush_l2,
            measure=self.measure,
            # --against: every process asked for (a pair needs its rounds), the budget for sampling
            startup_in_budget=self.against is None,
        )

    def _against_max(self) -> int:
        """MAX of `--processes N..MAX` when --against is given without --processes on wall time:
        a pair takes rounds until its verdict is clear (0: no processes added)."""
        wanted = self.against is not None and self.processes is None and self.measure == WALL
        return AGAINST_MAX_PROCESSES if wanted else 0


@dataclass(frozen=True)
class PlannedRun:
    """The stored run the cells go into, the cells left to measure, and how long a worker may take."""

    run_id: int
    cells: tuple[PlannedCell, ...]
    timeout_s: float
    #: the run of the other build, measured side by side (`--against`)
    paired_with: int | None = None


def plan_new_run(
    store: Store,
    request: RunRequest,
    machine: dict[str, Any],
    cluster_options: dict[str, Any] | None = None,
) -> PlannedRun:
    """Create the run (and, with `--against`, the other build's run just before it) and plan every
    cell. `cluster_options`: the cluster's stored options when a cluster measures (each node then
    says whether it has a backend's framework)."""
    policy = request.policy()
    threads = request.threads or cpu_count()
    options = RunOptions(
        policy=policy.__dict__,
        threads=threads,
        timeout_s=request.timeout_s,
        fast=request.fast,
        full=request.full,
        cluster=cluster_options,
    )
    backends = list(request.backends) if request.backends else None
    sizes = list(request.sizes) if request.sizes else None

    def cells_of(workloads: Sequence[Workload]) -> list[PlannedCell]:
        planned = plan_cells(
            workloads, backends, sizes, threads, policy, check_installed=cluster_options is None
        )
        return mark_uncountable(planned, policy.measure)

    def create(target: str, workloads: Sequence[Workload], stored: RunOptions) -> int:
        return store.create_run(
            target=target,
            workloads=[w.name for w in workloads],
            backends=backends or [],
            sizes=sizes,
            options=stored.to_json(),
            machine=machine,
        )

    if request.against is None:
        run_id = create(request.target, request.workloads, options)
        return PlannedRun(run_id, tuple(cells_of(request.workloads)), request.timeout_s)
    options_old, options_new = pair_options(options)
    old_run = create(request.against, request.against_workloads, options_old)
    run_id = create(request.target, request.workloads, options_new)
    cells = paired_plan(cells_of(request.workloads), cells_of(request.against_workloads), old_run)
    return PlannedRun(run_id, tuple(cells), request.timeout_s, paired_with=old_run)


def plan_resumed_run(
    store: Store, run: RunRecord, workloads: Sequence[Workload], timeout_s: float, cluster: Any = None
) -> PlannedRun:
    """The cells of a stored run that are missing, failed or partial, with its own options (its
    stored worker timeout, else `timeout_s`; a `jitlab.engine.cluster.Cluster` measures them when
    given)."""
    options = run.run_options
    policy = TimingPolicy(**options.policy)
    if options.full:
        workloads = [workload.full_grid() for workload in workloads]
    planned = plan_cells(
        workloads,
        list(run.backends) or None,
        list(run.sizes) if run.sizes else None,
        options.threads,
        policy,
        check_installed=cluster is None,
    )
    left = mark_uncountable(missing_cells(store, run.run_id, planned, cluster), policy.measure)
    return PlannedRun(run.run_id, tuple(left), float(options.timeout_s or timeout_s))


def run_to_resume(store: Store, run_id: str, target: str, on_cluster: bool) -> RunRecord:
    """The stored run `jitlab run TARGET --resume RUN_ID` measures the rest of: it must have
    measured the same target, and a run measured on a Ray cluster resumes on one (`on_cluster`)."""
    run = store.run(run_id)
    if run.target != target and Path(run.target).resolve() != Path(target).resolve():
        raise UserError(
            f"run {run.run_id} measured {run.target!r}, not {target!r}: give the same target to resume"
        )
    if run.run_options.cluster and not on_cluster:
        raise UserError(f"run {run.run_id} was measured on a Ray cluster: add --cluster ADDRESS to resume it")
    return run


def stored_cluster_settings(run: RunRecord) -> tuple[str | None, bool, bool, int | None]:
    """(nodes, spread, share_cores, threads) a run measured on a cluster was measured with, which
    its resumption uses again (all unset for a run measured on this machine)."""
    stored = dict(run.run_options.cluster or {})
    return (
        stored.get("nodes"),
        stored.get("spread", False),
        stored.get("share_cores", False),
        stored.get("threads"),
    )


def pair_options(options: RunOptions) -> tuple[RunOptions, RunOptions]:
    """The stored options of (OLD's run, NEW's run): the same measuring options, and an id both
    carry (not called a token: the store masks values of such keys) so that `jitlab compare` knows
    they were measured side by side."""
    pair_id = uuid.uuid4().hex
    return (
        replace(options, pair={"id": pair_id, "side": "against"}),
        replace(options, pair={"id": pair_id, "side": "new"}),
    )


def mark_uncountable(planned: Sequence[PlannedCell], measure: str) -> list[PlannedCell]:
    """With instructions, the cells of backends that cannot run under Valgrind become unavailable
    with the reason (one line per backend below the table)."""
    if measure != INSTRUCTIONS:
        return list(planned)
    return [
        cell
        if cell.unavailable_reason or not valgrind.cannot_count(cell.spec.backend)
        else replace(cell, unavailable_reason=valgrind.cannot_count(cell.spec.backend))
        for cell in planned
    ]
