"""An unreachable or malformed cluster address: one line naming it and what to do, exit 2, nothing
written (no store is created)."""

from __future__ import annotations

import socket

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "address, needles",
    [
        ("127.0.0.1:{port}", ["cannot reach the Ray cluster at 127.0.0.1:", "ray start --head"]),
        ("ray://127.0.0.1:{port}", ["cannot reach the Ray cluster at ray://127.0.0.1:", "ray start --head"]),
        ("not-an-address", ["is not a Ray address", "auto, local, ray://HOST:PORT"]),
    ],
)
@pytest.mark.parametrize("command", [["run", "pi", "--backends", "python"], ["capture", "corpus/basics.py"]])
def test_unreachable_cluster(jitlab_cli, tmp_path, address, needles, command):
    store = tmp_path / "s.sqlite"
    store_args = ["--store", str(store)] if command[0] == "run" else []  # capture stores nothing
    result = jitlab_cli(*command, "--cluster", address.format(port=free_port()), *store_args)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in lines[0]
    assert not store.exists()


def test_cluster_options_need_a_cluster(jitlab_cli, tmp_path):
    result = jitlab_cli("run", "pi", "--spread", "--store", str(tmp_path / "s.sqlite"))
    assert result.returncode == 2 and "need --cluster" in result.stderr
