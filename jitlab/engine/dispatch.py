"""Where jobs run: on this machine one after another, or on the nodes of a Ray cluster.

`jitlab run` (a job measures one cell) and `jitlab capture` (a job runs a batch of cases) hand
their jobs to a `Dispatcher` and get each outcome back as soon as it exists. A job is a module-level
function and its arguments; on a cluster it runs on the node the dispatcher chose, where it still
starts the cell's own fresh worker process (the job is only the node-side parent of that process).

The local dispatcher runs jobs in this process, in order; `jitlab.engine.ray_dispatch` runs them as
Ray tasks. Ray is imported only when a cluster is asked for. The shared types (`Job`, `Node`,
`Outcome`, `Dispatcher`) live in `jitlab.engine.jobs`, which both dispatchers import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from jitlab.backends.base import cpu_count
from jitlab.engine.interrupts import deferred_interrupts, raise_if_interrupted
from jitlab.engine.jobs import Dispatcher, Job, Node, Outcome
from jitlab.errors import UserError

__all__ = ["Dispatcher", "Job", "LocalDispatcher", "Node", "Outcome", "open_dispatcher", "select_nodes"]


class LocalDispatcher:
    """This machine, one job at a time, in the order given (timings need the machine alone)."""

    def __init__(self) -> None:
        self.nodes = [Node("local", "local", cpus=float(cpu_count()), local=True)]

    def run(
        self,
        jobs: Iterable[Job],
        on_start: Callable[[Job, Node], None] = lambda job, node: None,
        on_done: Callable[[Outcome], None] = lambda outcome: None,
    ) -> None:
        node = self.nodes[0]
        with deferred_interrupts():  # Ctrl-C stops the run between cells, never halfway through one
            for job in jobs:
                raise_if_interrupted()
                on_start(job, node)
                on_done(Outcome(job, node, job.fn(*job.args)))

    def close(self) -> None:
        pass


def select_nodes(nodes: Sequence[Node], selectors: str | None) -> list[Node]:
    """The nodes named by `--nodes` (names, addresses, node-id prefixes or key=value labels,
    comma-separated); all of them without a selector. A selector matching nothing is an error."""
    if not selectors:
        return list(nodes)
    chosen: list[Node] = []
    for selector in (s.strip() for s in selectors.split(",") if s.strip()):
        if "=" in selector:
            key, value = (part.strip() for part in selector.split("=", 1))
            matched = [n for n in nodes if n.labels.get(key) == value]
        else:
            matched = [
                n
                for n in nodes
                if selector in (n.name, n.address) or (len(selector) >= 6 and n.node_id.startswith(selector))
            ]
        if not matched:
            known = ", ".join(f"{n.name} ({n.address})" for n in nodes) or "none"
            raise UserError(f"--nodes {selector!r} matches no node of the cluster (nodes: {known})")
        chosen += [n for n in matched if n not in chosen]
    return chosen


def open_dispatcher(cluster: str | None) -> Dispatcher:
    """The local dispatcher, or a connection to the Ray cluster at `cluster` (an unreachable address
    is a `UserError`, raised before anything is written)."""
    if not cluster:
        return LocalDispatcher()
    from jitlab.engine.ray_dispatch import RayDispatcher

    return RayDispatcher.connect(cluster)
