"""The options `jitlab run` and `jitlab capture` share for running on a Ray cluster."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from jitlab.errors import UserError

if TYPE_CHECKING:
    from jitlab.engine.cluster import Cluster

__all__ = ["check_cluster_options", "cluster_options", "connect_cluster"]


def cluster_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --cluster, --nodes, --spread and --share-cores to a click command."""
    for option in reversed(
        [
            click.option(
                "--cluster",
                default=None,
                metavar="ADDRESS",
                help="run on a Ray cluster: auto, local, ray://HOST:PORT or HOST:PORT (the head node)",
            ),
            click.option(
                "--nodes",
                default=None,
                metavar="SELECTORS",
                help="with --cluster: only these nodes (names, addresses or key=value labels, comma-separated)",
            ),
            click.option(
                "--spread",
                is_flag=True,
                help="with --cluster: each cell once, on any selected node (default: every node measures every cell)",
            ),
            click.option(
                "--share-cores",
                is_flag=True,
                help="with --cluster: a cell asks its node for one CPU, not one per thread (cells may share cores)",
            ),
        ]
    ):
        command = option(command)
    return command


def check_cluster_options(cluster: str | None, nodes: str | None, spread: bool, share_cores: bool) -> None:
    if not cluster and (nodes or spread or share_cores):
        raise UserError("--nodes, --spread and --share-cores need --cluster ADDRESS")


def connect_cluster(
    cluster: str | None, nodes: str | None, spread: bool, share_cores: bool, threads: int | None = None
) -> Cluster | None:
    if not cluster:
        return None
    from jitlab.engine.cluster import Cluster  # Ray: only when a cluster is asked for

    return Cluster.connect(cluster, nodes, spread, share_cores, threads)
