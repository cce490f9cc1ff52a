"""Running jobs on a Ray cluster: each job a Ray task pinned to one node, results as they finish.

jitlab places jobs itself and pins each to its node (a hard node affinity), so it knows where every
cell is measured, can run every cell on every node (one column per machine), and can tell a lost
node's cells from the others'. A node runs a job only when the CPUs and GPUs the job asks for are
free there; Ray enforces the same requests against everything else running on the cluster. Tasks are
never retried by Ray: a cell whose node died is recorded as failed with the reason, and
`jitlab run --resume` measures it again.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from jitlab.engine.jobs import Job, Node, Outcome
from jitlab.engine.ray_connect import init_ray
from jitlab.errors import UserError

#: a node's `machine` label names it in tables and the store (`ray start --labels machine=NAME`)
NAME_LABEL = "machine"
#: seconds between checks of which nodes are alive
ALIVE_CHECK_S = 2.0
PROBE_TIMEOUT_S = 180.0
#: how long a Ray system error waits for the cluster to declare the node dead (or not)
NODE_DEATH_WAIT_S = 30.0


class RayDispatcher:
    def __init__(self, address: str, nodes: list[Node]) -> None:
        self.address = address
        self.nodes = nodes
        self._remote: dict[Callable[..., Any], Any] = {}

    # -- connecting --------------------------------------------------------------------------------
    @classmethod
    def connect(cls, address: str) -> RayDispatcher:
        """Connect to the cluster at `address` (errors name the cause: `ray_connect.init_ray`)."""
        address = address.strip()
        init_ray(address)  # a UserError when Ray is missing, too
        import ray

        nodes = cls._alive_nodes()
        if not nodes:
            ray.shutdown()
            raise UserError(
                f"the Ray cluster at {address} has no node with CPUs or GPUs: `ray start` on a machine"
            )
        return cls(address, nodes)

    @staticmethod
    def _alive_nodes() -> list[Node]:
        import ray

        nodes = []
        for n in ray.nodes():
            resources = n.get("Resources") or {}
            cpus, gpus = float(resources.get("CPU", 0)), float(resources.get("GPU", 0))
            if not n.get("Alive") or (cpus <= 0 and gpus <= 0):
                continue  # a head started with --num-cpus=0 only coordinates
            labels = {k: str(v) for k, v in (n.get("Labels") or {}).items() if not k.startswith("ray.io/")}
            name = labels.get(NAME_LABEL)
            address = n.get("NodeManagerAddress", "")
            nodes.append(
                Node(
                    n["NodeID"],
                    name or n.get("NodeName") or address,
                    address,
                    cpus,
                    gpus,
                    labels,
                    {k: float(v) for k, v in resources.items()},
                    named=bool(name),
                )
            )
        return sorted(nodes, key=lambda node: (node.name, node.node_id))

    def close(self) -> None:
        import ray

        ray.shutdown()

    # -- one task per job --------------------------------------------------------------------------
    def _submit(self, job: Job, node: Node) -> Any:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = self._remote.get(job.fn)
        if remote is None:
            remote = self._remote[job.fn] = ray.remote(job.fn)
        return remote.options(
            num_cpus=job.cpus,
            num_gpus=job.gpus,
            max_retries=0,
            retry_exceptions=False,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
        ).remote(*job.args)

    def on_each_node(self, fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
        """{node_id: fn(*args)} run once on every node (no CPU asked: it runs beside anything)."""
        import ray

        refs = {n.node_id: self._submit(Job(None, fn, args, n, cpus=0), n) for n in self.nodes}
        try:
            values = ray.get(list(refs.values()), timeout=PROBE_TIMEOUT_S)
        except Exception as exc:
            raise UserError(
                f"a node of the Ray cluster at {self.address} did not answer ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:200]}): check that jitlab is installed on every node"
            ) from None
        return dict(zip(refs, values))

    def run(
        self,
        jobs: Iterable[Job],
        on_start: Callable[[Job, Node], None] = lambda job, node: None,
        on_done: Callable[[Outcome], None] = lambda outcome: None,
    ) -> None:
        """Place each job on its node (or on any node with room), start it when the node has the CPUs
        and GPUs it asks for, and report each outcome as soon as it exists."""
        import ray

        by_id = {n.node_id: n for n in self.nodes}
        queues: dict[str, deque[Job]] = {n.node_id: deque() for n in self.nodes}
        shared: deque[Job] = deque()
        for job in jobs:
            (queues[job.node.node_id] if job.node else shared).append(job)
        used = {n.node_id: [0.0, 0.0] for n in self.nodes}
        running: dict[str, int] = {n.node_id: 0 for n in self.nodes}
        in_flight: dict[Any, tuple[Job, Node]] = {}
        alive = set(by_id)
        last_check = time.monotonic()

        def fits(job: Job, node: Node) -> bool:
            cpus, gpus = used[node.node_id]
            return (running[node.node_id] == 0 or cpus + job.cpus <= node.cpus + 1e-9) and (
                gpus + job.gpus <= node.gpus + 1e-9
            )

        def start(job: Job, node: Node) -> None:
            on_start(job, node)
            ref = self._submit(job, node)
            in_flight[ref] = (job, node)
            used[node.node_id][0] += job.cpus
            used[node.node_id][1] += job.gpus
            running[node.node_id] += 1

        def release(job: Job, node: Node) -> None:
            used[node.node_id][0] -= job.cpus
            used[node.node_id][1] -= job.gpus
            running[node.node_id] -= 1

        def fill() -> None:
            for node_id in sorted(alive):
                node, queue = by_id[node_id], queues[node_id]
                while queue and fits(queue[0], node):
                    start(queue.popleft(), node)
            while shared:
                room = [by_id[i] for i in alive if fits(shared[0], by_id[i])]
                if not room:
                    break
                start(shared.popleft(), min(room, key=lambda n: (running[n.node_id], n.name)))

        def lose(node_id: str) -> None:
            node = by_id[node_id]
            alive.discard(node_id)
            for ref, (job, where) in list(in_flight.items()):
                if where.node_id == node_id:
                    del in_flight[ref]
                    release(job, where)
                    ray.cancel(ref, force=True)
                    on_done(
                        Outcome(
                            job, node, error=f"node {node.name} ({node.address}) was lost while measuring"
                        )
                    )
            while queues[node_id]:
                job = queues[node_id].popleft()
                on_done(
                    Outcome(job, node, error=f"node {node.name} ({node.address}) was lost before measuring")
                )

        try:
            while True:
                fill()
                if not in_flight:
                    # nothing running and nothing startable: what is left fits no live node
                    for job in shared:
                        on_done(Outcome(job, None, error=self._no_room(job, alive, by_id)))
                    for node_id, queue in queues.items():
                        if node_id not in alive:
                            continue
                        while queue:
                            on_done(
                                Outcome(
                                    queue[0],
                                    by_id[node_id],
                                    error=self._no_room(queue.popleft(), {node_id}, by_id),
                                )
                            )
                    break
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
                for ref in ready:
                    job, node = in_flight.pop(ref)
                    release(job, node)
                    try:
                        on_done(Outcome(job, node, ray.get(ref)))
                    except ray.exceptions.RayError as exc:
                        on_done(Outcome(job, node, error=self._reason(exc, node)))
                if time.monotonic() - last_check > ALIVE_CHECK_S or not ready:
                    last_check = time.monotonic()
                    now_alive = {n.node_id for n in self._alive_nodes()}
                    for node_id in sorted(alive - now_alive):
                        lose(node_id)
        except BaseException:  # Ctrl-C or a failing callback: stop what still runs
            for ref in in_flight:
                ray.cancel(ref, force=True)
            raise

    def _reason(self, exc: Exception, node: Node) -> str:
        import ray

        if not isinstance(exc, ray.exceptions.RayTaskError):
            # Ray's own failure (worker or raylet gone): wait for the cluster to say whether the
            # node is dead, so the cell's reason names the real cause
            deadline = time.monotonic() + NODE_DEATH_WAIT_S
            while node.node_id in {n.node_id for n in self._alive_nodes()} and time.monotonic() < deadline:
                time.sleep(0.5)
        if node.node_id not in {n.node_id for n in self._alive_nodes()}:
            return f"node {node.name} ({node.address}) was lost while measuring"
        cause = getattr(exc, "cause", None) or exc
        message = " ".join(str(cause).split())[:300]
        return f"the job failed on node {node.name} ({node.address}): {type(cause).__name__}: {message}"

    @staticmethod
    def _no_room(job: Job, alive: set[str], by_id: dict[str, Node]) -> str:
        if not alive:
            return "every selected node of the cluster was lost"
        sizes = ", ".join(
            f"{by_id[i].name}: {by_id[i].cpus:g} CPUs, {by_id[i].gpus:g} GPUs" for i in sorted(alive)
        )
        return f"no node has the {job.cpus:g} CPUs and {job.gpus:g} GPUs this job asks for ({sizes})"
