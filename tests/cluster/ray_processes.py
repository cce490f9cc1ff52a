"""A Ray cluster started the way the README tells users to: `ray start` processes with token
authentication, a head that only coordinates and labelled nodes, here all on this machine's loopback.

Every machine of the README is played by its own home folder (the head's, each node's, and the one
of the machine that runs jitlab), so the head's `~/.ray/auth_token` must be copied to the nodes as
between real machines, and the user's own `~/.ray` is never read or written. Each `ray start` runs in
a process group of its own under a temporary folder; `stop` ends those groups, and only them
(`ray stop` would stop every Ray process of the machine).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: `ray start` returns once its node has joined; its retries on failure end well within this
START_TIMEOUT_S = 180.0
STOP_GRACE_S = 5.0
AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_command() -> list[str]:
    """The `ray` command of the Python running the tests."""
    script = Path(sys.executable).with_name("ray")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())"]


class TokenCluster:
    """A head (no CPUs) and nodes of one CPU each labelled machine=NAME, with token authentication."""

    def __init__(self, nodes: tuple[str, ...] = ("box-a", "box-b")) -> None:
        # short: Ray's unix sockets live under the temporary folder and their paths are limited
        self.base = Path(tempfile.mkdtemp(prefix="jr", dir="/tmp"))
        self.temp_dir = self.base / "t"
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.client_port = free_port()  # Ray Client's (ray://127.0.0.1:PORT)
        self.groups: list[int] = []
        self.logs: dict[str, str] = {}
        try:
            self._start(nodes)
        except BaseException:
            self.stop()
            raise

    def home(self, machine: str) -> Path:
        path = self.base / "home" / machine
        path.mkdir(parents=True, exist_ok=True)
        return path

    def env(self, machine: str, **extra: str) -> dict[str, str]:
        """The environment of a shell on `machine`: its own home, no Ray authentication settings of
        the user's, plus `extra`."""
        env = {k: v for k, v in os.environ.items() if k not in AUTH_VARS}
        env.update(HOME=str(self.home(machine)), RAY_USAGE_STATS_ENABLED="0", **extra)
        return env

    @property
    def token(self) -> str:
        return (self.home("head") / ".ray" / "auth_token").read_text().strip()

    def give_token(self, machine: str) -> Path:
        """Copy the head's ~/.ray/auth_token to `machine`'s home, as a user copies it between machines."""
        target = self.home(machine) / ".ray" / "auth_token"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.home("head") / ".ray" / "auth_token", target)
        return target

    def _ray(self, machine: str, *args: str) -> None:
        """`RAY_AUTH_MODE=token ray ARGS` on `machine`, in a process group of its own."""
        process = subprocess.Popen(
            [*ray_command(), *args],
            env=self.env(machine, RAY_AUTH_MODE="token"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.groups.append(process.pid)
        out, _ = process.communicate(timeout=START_TIMEOUT_S)
        self.logs[f"{machine}: ray {args[0]}"] = out
        if process.returncode != 0:
            raise RuntimeError(f"`ray {' '.join(args)}` on {machine} failed ({process.returncode}):\n{out}")

    def _start(self, nodes: tuple[str, ...]) -> None:
        common = ["--node-ip-address", "127.0.0.1", "--temp-dir", str(self.temp_dir), "--disable-usage-stats"]
        self._ray("head", "get-auth-token", "--generate")
        self._ray(
            "head", "start", "--head", "--port", str(self.port), "--num-cpus", "0",
            "--include-dashboard", "false", "--ray-client-server-port", str(self.client_port), *common,
        )  # fmt: skip
        for name in nodes:
            self.give_token(name)
            self._ray(
                name, "start", "--address", self.address, "--labels", f"machine={name}", "--num-cpus", "1",
                "--dashboard-agent-listen-port", str(free_port()), "--metrics-export-port", str(free_port()),
                *common,
            )  # fmt: skip

    def _alive(self, group: int) -> list[int]:
        """Processes still in process group `group` (where there is no /proc: [group] while any is)."""
        if not Path("/proc/self").exists():
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return []
            return [group]
        members = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":  # pgrp, and not a zombie
                members.append(int(stat.parent.name))
        return members

    def stop(self) -> None:
        """End the process groups this cluster started (SIGTERM, then SIGKILL), and its files."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for group in self.groups:
                if self._alive(group):
                    try:
                        os.killpg(group, sig)
                    except ProcessLookupError:
                        pass
            deadline = time.monotonic() + STOP_GRACE_S
            while any(self._alive(g) for g in self.groups) and time.monotonic() < deadline:
                time.sleep(0.2)
        self.groups = [g for g in self.groups if self._alive(g)]
        shutil.rmtree(self.base, ignore_errors=True)
