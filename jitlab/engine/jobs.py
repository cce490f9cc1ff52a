"""The vocabulary every dispatcher shares: a `Node` jobs run on, a `Job`, its `Outcome`, and the
`Dispatcher` protocol.

It lives apart from `jitlab.engine.dispatch` (the local dispatcher, node selection, choosing a
dispatcher) and `jitlab.engine.ray_dispatch` (the Ray one) so that both import it and neither
imports the other's types: the local module may name the Ray dispatcher without a circle of imports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Node:
    """A machine jobs can run on. `name` is what tables and progress bars call it."""

    node_id: str
    name: str
    address: str = ""
    cpus: float = 1.0
    gpus: float = 0.0
    labels: dict[str, str] = field(default_factory=dict, compare=False)
    resources: dict[str, float] = field(default_factory=dict, compare=False)
    #: True when `name` came from the node's `machine` label (a name the user chose)
    named: bool = False
    #: True for this machine under the local dispatcher (not a cluster node)
    local: bool = False


@dataclass(frozen=True)
class Job:
    """One unit of work: `fn(*args)` on `node` (None: any node with room), needing cpus and gpus."""

    key: Any
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    node: Node | None = None
    cpus: float = 1.0
    gpus: float = 0.0
    label: str = ""


@dataclass(frozen=True)
class Outcome:
    """What came of a job: its value, or why it has none (its node was lost, it could not start)."""

    job: Job
    node: Node | None
    value: Any = None
    error: str | None = None


class Dispatcher(Protocol):
    nodes: list[Node]

    def run(
        self,
        jobs: Iterable[Job],
        on_start: Callable[[Job, Node], None],
        on_done: Callable[[Outcome], None],
    ) -> None:
        """Run every job; `on_done` is called once per job, in the order they finish."""

    def close(self) -> None: ...
