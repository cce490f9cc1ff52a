"""`jitlab capture --cluster`: the corpus's cases in batches on the nodes of a Ray cluster.

Each batch is one job of the engine's dispatcher; on its node it runs exactly as a local batch does
(`jitlab.capture.harness.run_batch`: a worker process per batch, a time limit per method, a fresh
worker after a crash). By default every selected node runs every case (graph capture depends on the
torch build and hardware of each machine); with `spread` each case runs once, on any node. A batch
whose node was lost records every method of its cases as failed with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jitlab.capture.corpus import Case
from jitlab.engine.jobs import Job, Node, Outcome

if TYPE_CHECKING:
    from jitlab.engine.cluster import Cluster

Results = dict[tuple[str, str], dict[str, Any]]
#: cases per batch at most: a batch is also the unit of progress and of loss when a node dies
MAX_BATCH = 8


def capture_batch_on_node(
    corpora: list[str],
    items: list[tuple[str, list[str]]],
    timeout_s: float,
    calls: int,
    worker: str,
    options: dict[str, Any],
    shipped: dict[str, str],
) -> list[tuple[str, str, dict[str, Any]]]:
    """Runs on a node: the batch's results as (case, method, result)."""
    from jitlab.capture.harness import run_batch
    from jitlab.engine.node_tasks import files_on_node

    with files_on_node(shipped) as mapping:
        local = [mapping.get(path, path) for path in corpora]
        results = run_batch(local, items, timeout_s, calls, None, worker, options)
    return [(case, method, result) for (case, method), result in results.items()]


def batches(cases: list[Case], methods: list[str], slots: int) -> list[list[tuple[str, list[str]]]]:
    """About four batches per slot (so nodes finish together), at most MAX_BATCH cases each."""
    size = max(1, min(MAX_BATCH, math.ceil(len(cases) / max(1, 4 * slots))))
    items = [(case.name, list(methods)) for case in cases]
    return [items[i : i + size] for i in range(0, len(items), size)]


def run_on_cluster(
    cluster: Cluster,
    corpora: list[str],
    cases: list[Case],
    methods: list[str],
    timeout_s: float,
    calls: int = 3,
    worker: str = "jitlab.capture.worker",
    options: dict[str, Any] | None = None,
    timed: bool = False,
    on_result: Callable[[str, str, str, dict[str, Any]], None] | None = None,
) -> dict[str, Results]:
    """{machine name: results} (one entry, "", when spread). `timed` batches (--speed) ask for a whole
    node, as a local speed run has the machine to itself; others for one CPU (one thread each)."""
    from jitlab.engine.node_tasks import read_files

    shipped = read_files(list(corpora))
    if timed:  # one timed batch per node at a time
        slots = len(cluster.nodes) if cluster.spread else 1
    else:
        slots = int(
            sum(n.cpus for n in cluster.nodes) if cluster.spread else max(n.cpus for n in cluster.nodes)
        )
    jobs: list[Job] = []
    for batch in batches(cases, methods, slots):
        args = (list(corpora), batch, timeout_s, calls, worker, options or {}, shipped)
        targets: list[Node | None] = [None] if cluster.spread else list(cluster.nodes)
        for node in targets:
            cpus = min(n.cpus for n in ([node] if node else cluster.nodes)) if timed else 1.0
            jobs.append(Job(batch, capture_batch_on_node, args, node, cpus=cpus))
    by_machine: dict[str, Results] = {}

    def finished(outcome: Outcome) -> None:
        machine = "" if cluster.spread or outcome.node is None else outcome.node.name
        results = by_machine.setdefault(machine, {})
        if outcome.error is not None:
            found = [
                (
                    case,
                    method,
                    {"full_graph": False, "equal": None, "captured": False, "error": outcome.error},
                )
                for case, case_methods in outcome.job.key
                for method in case_methods
            ]
        else:
            found = outcome.value
        for case, method, result in found:
            results[(case, method)] = result
            if on_result:
                on_result(machine, case, method, result)

    cluster.dispatcher.run(jobs, lambda job, node: None, finished)
    return by_machine
