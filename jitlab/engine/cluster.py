"""A sweep across the machines of a Ray cluster: which nodes measure, what each cell asks of a node,
and the machine metadata recorded with each cell.

By default every selected node measures every cell, so the same sweep on three machines gives three
columns. With `spread`, each cell is measured once, on whichever selected node has room (a pool of
identical machines, or a long capture study). A cell asks its node for one GPU when its backend can
use one and the node has one, and otherwise for as many CPUs as it runs threads, so two timed cells
never share cores; `share_cores` asks for one CPU per cell instead (more cells at once, noisier).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from jitlab.backends import get_backend
from jitlab.backends.base import Backend
from jitlab.engine.dispatch import Job, Node, select_nodes
from jitlab.engine.ray_dispatch import RayDispatcher
from jitlab.errors import UserError
from jitlab.store.identity import machine_label
from jitlab.store.machine import machine_fingerprint


def can_use_gpu(backend_name: str) -> bool:
    """Backends that look for devices of their own (the framework's GPUs); the rest compute on CPUs."""
    try:
        backend = get_backend(backend_name)
    except UserError:
        return False
    return type(backend).devices is not Backend.devices


@dataclass
class Cluster:
    dispatcher: RayDispatcher
    #: the selected nodes, each with its machine metadata as recorded with its cells
    nodes: list[Node]
    machines: dict[str, dict[str, Any]]
    spread: bool = False
    share_cores: bool = False
    #: threads per cell as the user asked (None: each node's CPUs)
    threads: int | None = None

    @classmethod
    def connect(
        cls,
        address: str,
        selectors: str | None,
        spread: bool = False,
        share_cores: bool = False,
        threads: int | None = None,
    ) -> Cluster:
        """Connect, select nodes and ask each for its machine metadata. Errors are `UserError`s,
        raised before the store is touched."""
        dispatcher = RayDispatcher.connect(address)
        try:
            dispatcher.nodes = select_nodes(dispatcher.nodes, selectors)
            from jitlab.engine.node_tasks import describe_node

            infos = dispatcher.on_each_node(describe_node)
        except BaseException:
            dispatcher.close()
            raise
        nodes, machines = name_nodes(dispatcher.nodes, infos)
        dispatcher.nodes = nodes
        return cls(dispatcher, nodes, machines, spread, share_cores, threads)

    def close(self) -> None:
        self.dispatcher.close()

    def describe(self) -> list[dict[str, Any]]:
        """For the run's options: which nodes took part."""
        return [
            {"name": n.name, "address": n.address, "node_id": n.node_id, "cpus": n.cpus, "gpus": n.gpus}
            for n in self.nodes
        ]

    def options(self, address: str, selectors: str | None) -> dict[str, Any]:
        """What the run records of its cluster, so `--resume` measures on the same terms."""
        return {
            "address": address,
            "nodes": selectors,
            "spread": self.spread,
            "share_cores": self.share_cores,
            "threads": self.threads,
            "machines": self.describe(),
        }

    def label(self, node: Node) -> str:
        return machine_label(self.machines[node.node_id])

    def threads_for(self, requested: int | None) -> dict[str, int]:
        """Threads per cell on each node: as asked, else the node's CPUs (the fewest, when spread)."""
        if requested:
            return {n.node_id: requested for n in self.nodes}
        if self.spread:
            fewest = max(1, int(min(n.cpus for n in self.nodes)))
            return {n.node_id: fewest for n in self.nodes}
        return {n.node_id: max(1, int(n.cpus)) for n in self.nodes}

    def request(self, backend: str, threads: int, node: Node | None) -> tuple[float, float]:
        """(CPUs, GPUs) a cell asks of `node` (of the smallest node when it may go anywhere)."""
        nodes = [node] if node else self.nodes
        gpus = 1.0 if can_use_gpu(backend) and all(n.gpus >= 1 for n in nodes) else 0.0
        if gpus:
            cpus = 1.0  # the host thread that drives the GPU
        elif self.share_cores:
            cpus = 1.0
        else:
            cpus = float(min([threads, *(n.cpus for n in nodes)]))
        return cpus, gpus

    def jobs_for_cell(
        self, key: Any, spec_json: dict[str, Any], backend: str, threads_by_node: dict[str, int], make
    ) -> list[Job]:
        """One job per selected node, or one for any node when spread. `make(spec_json)` gives the
        job's (fn, args) for a spec with that node's thread count."""
        if self.spread:
            threads = next(iter(threads_by_node.values()))
            cpus, gpus = self.request(backend, threads, None)
            fn, args = make({**spec_json, "threads": threads})
            return [Job(key, fn, args, None, cpus, gpus)]
        jobs = []
        for node in self.nodes:
            threads = threads_by_node[node.node_id]
            cpus, gpus = self.request(backend, threads, node)
            fn, args = make({**spec_json, "threads": threads})
            jobs.append(Job((key, node.node_id), fn, args, node, cpus, gpus))
        return jobs


def name_nodes(
    nodes: Sequence[Node], infos: dict[str, dict[str, Any]]
) -> tuple[list[Node], dict[str, dict[str, Any]]]:
    """Give every node a name for tables and the store, and the metadata recorded with its cells.

    A node's `machine` label is its name. Otherwise it is known by its hardware fingerprint, as this
    machine's own runs are, unless two selected nodes share one: then their host names (and, for
    two nodes on one host, a piece of the node id) tell them apart."""
    fingerprints: dict[str, int] = {}
    for node in nodes:
        fingerprints[machine_fingerprint(infos[node.node_id])] = (
            fingerprints.get(machine_fingerprint(infos[node.node_id]), 0) + 1
        )
    hosts: dict[str, int] = {}
    for node in nodes:
        host = infos[node.node_id].get("hostname") or node.address
        hosts[host] = hosts.get(host, 0) + 1
    named, machines = [], {}
    for node in nodes:
        info = dict(infos[node.node_id])
        host = info.get("hostname") or node.address
        if node.named:
            name = node.name
            info["name"] = name
        elif fingerprints[machine_fingerprint(info)] > 1:
            name = host if hosts[host] == 1 else f"{host}#{node.node_id[:6]}"
            info["name"] = name
        else:
            name = host
        info["node"] = {"address": node.address, "labels": dict(node.labels)}
        named.append(replace(node, name=name))
        machines[node.node_id] = info
    return named, machines
