"""`jitlab run --cluster` on a cluster started as the README says, with `ray start` processes and
token authentication: with the head's token (the file copied, or RAY_AUTH_TOKEN) both labelled nodes
measure every cell; without it, one line names token authentication and what is missing, exit 2,
nothing stored and none of Ray's own log lines."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from ray_processes import TokenCluster

from jitlab.store import Store
from jitlab.store.identity import machine_label

pytestmark = pytest.mark.timeout(600)
NODES = ("box-a", "box-b")
RUN = ["run", "pi", "--backends", "numpy,python", "--sizes", "1e4", "--threads", "1", "--processes", "1"]
RUN += ["--budget", "0.2", "--no-plot"]


@pytest.fixture(scope="module")
def token_cluster():
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("ray is not installed (pip install 'jitlab[cluster]')")
    cluster = TokenCluster(NODES)
    try:
        yield cluster
    finally:
        cluster.stop()
    assert not cluster.groups, f"Ray processes left in process groups {cluster.groups}"


def jitlab(cluster: TokenCluster, machine: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`jitlab ARGS` on `machine` of the cluster (its own home; no Ray settings but `env`)."""
    return subprocess.run(
        [sys.executable, "-m", "jitlab", *args],
        env=cluster.env(machine, **env),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("token_via", ["file", "variable"])
def test_with_the_token_every_node_measures_every_cell(token_cluster, tmp_path, token_via):
    machine = f"driver-{token_via}"
    env = {"RAY_AUTH_MODE": "token"}
    if token_via == "file":
        token_cluster.give_token(machine)  # the README's way: ~/.ray/auth_token copied from the head
    else:
        env["RAY_AUTH_TOKEN"] = token_cluster.token
    store = tmp_path / "s.sqlite"
    result = jitlab(
        token_cluster, machine, *RUN, "--cluster", token_cluster.address, "--store", str(store), **env
    )
    assert result.returncode == 0, result.stderr
    for node in NODES:
        assert f"fastest · pi on {node}" in result.stdout, result.stdout
    cells = {(machine_label(c.machine), c.backend, c.size): c for c in Store(store, create=False).cells(1)}
    assert set(cells) == {(node, b, 10_000) for node in NODES for b in ("numpy", "python")}
    for (node, _, _), cell in cells.items():
        assert cell.ok and cell.samples_s, cell.reason
        assert cell.machine["node"]["labels"]["machine"] == node
    assert "gcs_client" not in result.stderr and "InvalidAuthToken" not in result.stderr


@pytest.mark.parametrize(
    "case, needles",
    [
        # the case: neither the mode nor the token on the machine that runs jitlab
        ("nothing", ["RAY_AUTH_MODE=token is not set and no token was found", "export RAY_AUTH_MODE=token",
                     "copy the head's ~/.ray/auth_token", "RAY_AUTH_TOKEN"]),
        ("file without mode", ["RAY_AUTH_MODE=token is not set here", "export RAY_AUTH_MODE=token"]),
        ("mode without token", ["no token was found (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)",
                                "copy the head's ~/.ray/auth_token"]),
        ("wrong token", ["refused the token from RAY_AUTH_TOKEN (not the head's token)",
                         "copy the head's ~/.ray/auth_token"]),
    ],
)  # fmt: skip
def test_without_the_token_one_line_names_token_authentication(token_cluster, tmp_path, case, needles):
    machine = "driver-" + case.replace(" ", "-")
    env = {}
    if case == "file without mode":
        token_cluster.give_token(machine)
    if case in ("mode without token", "wrong token"):
        env["RAY_AUTH_MODE"] = "token"
    if case == "wrong token":
        env["RAY_AUTH_TOKEN"] = "not-the-heads-token"
    store = tmp_path / "s.sqlite"
    result = jitlab(
        token_cluster, machine, *RUN, "--cluster", token_cluster.address, "--store", str(store), **env
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr  # none of Ray's C++ log lines (gcs_client.cc ...)
    assert (
        lines[0].startswith("jitlab: error: the Ray cluster at 127.0.0.1:")
        and "uses token authentication" in lines[0]
    )
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert not store.exists()


def test_capture_names_token_authentication_too(token_cluster):
    result = jitlab(
        token_cluster, "driver-capture", "capture", "corpus/basics.py", "--cluster", token_cluster.address
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "uses token authentication" in lines[0], result.stderr


def test_ray_client_address_names_token_authentication_too(token_cluster, tmp_path):
    address = f"ray://127.0.0.1:{token_cluster.client_port}"
    store = tmp_path / "s.sqlite"
    result = jitlab(token_cluster, "driver-client", *RUN, "--cluster", address, "--store", str(store))
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert f"the Ray cluster at {address} uses token authentication" in lines[0]
    assert "RAY_AUTH_MODE=token is not set and no token was found" in lines[0]
    assert not store.exists()
