"""One real local Ray cluster for the cluster tests of a module: a head that only coordinates and two
worker nodes of one CPU each, named by their `machine` label, on this machine."""

from __future__ import annotations

import os

import pytest


def _ray():
    try:
        import ray.cluster_utils
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("ray is not installed (pip install 'jitlab[cluster]')")
    return ray.cluster_utils


class LocalCluster:
    """A `ray.cluster_utils.Cluster` with named nodes that tests can kill and bring back."""

    def __init__(self) -> None:
        cluster_utils = _ray()
        self.cluster = cluster_utils.Cluster(
            initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
        )
        self.nodes = {}
        self.add("node-a", framework=True)
        self.add("node-b", framework=False)

    @property
    def address(self) -> str:
        return self.cluster.address

    def add(self, name: str, framework: bool = False) -> None:
        """A node with 1 CPU, a custom resource of its own, the label machine=NAME; with `framework`
        the test's "node-only" backend is installed there."""
        env = {"JITLAB_TEST_FRAMEWORK": "1"} if framework else {}
        self.nodes[name] = self.cluster.add_node(
            num_cpus=1,
            resources={name.replace("-", "_"): 1},
            labels={"machine": name},
            env_vars=env,
        )
        self.cluster.wait_for_nodes()

    def kill(self, name: str) -> None:
        self.cluster.remove_node(self.nodes.pop(name), allow_graceful=False)

    def shutdown(self) -> None:
        self.cluster.shutdown()


@pytest.fixture(scope="module")
def ray_cluster():
    cluster = LocalCluster()
    try:
        yield cluster
    finally:
        cluster.shutdown()
