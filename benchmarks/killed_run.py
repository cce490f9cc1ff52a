"""Benchmark: how soon a worker, and the child it started, are gone after `jitlab run` is killed
with SIGKILL (`jitlab.lifeline`).

Each round runs `jitlab run tests/data/slow_workload.py` (its numpy cell sleeps 300 s per call; its
worker starts a `sleep 600` child in its process group and writes both pids), SIGKILLs the run once
both pids are written, and polls every millisecond until each process is gone (a zombie waiting for
its reaper counts as gone). Linux only (it reads /proc).

    python benchmarks/killed_run.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = REPO / "tests" / "data" / "slow_workload.py"
GIVE_UP_S = 60.0


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def one_round() -> tuple[float, float]:
    """Seconds from the SIGKILL until the worker, and until its child, were gone."""
    with tempfile.TemporaryDirectory() as scratch:
        pids_file = Path(scratch) / "pids"
        run = subprocess.Popen(
            [sys.executable, "-m", "jitlab", "run", str(WORKLOAD), "--backends", "python,numpy"]
            + ["--budget", "0.05", "--store", f"{scratch}/s.sqlite", "--no-plot"],
            env={**os.environ, "SLOW_S": "300", "SLOW_PIDS": str(pids_file)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while not (pids_file.exists() and len(pids_file.read_text().split()) >= 2):
            if run.poll() is not None:
                raise SystemExit(f"jitlab run ended ({run.returncode}) before its slow cell started")
            time.sleep(0.05)
        pids = [int(pid) for pid in pids_file.read_text().split()[:2]]
        time.sleep(0.3)  # the cell's call is under way
        killed = time.monotonic()
        run.send_signal(signal.SIGKILL)
        gone: dict[int, float] = {}
        while len(gone) < len(pids) and time.monotonic() - killed < GIVE_UP_S:
            for pid in pids:
                if pid not in gone and not running(pid):
                    gone[pid] = time.monotonic() - killed
            time.sleep(0.001)
        run.wait()
        for pid in pids:  # whatever is left is reported as never gone, and not left running
            if pid not in gone:
                os.kill(pid, signal.SIGKILL)
        return gone.get(pids[0], float("inf")), gone.get(pids[1], float("inf"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    rounds = parser.parse_args().rounds
    worker, child = [], []
    for index in range(rounds):
        w, c = one_round()
        worker.append(w)
        child.append(c)
        print(
            f"round {index}: worker gone after {w * 1e3:.1f} ms, its child after {c * 1e3:.1f} ms", flush=True
        )
    print(
        f"median: worker {statistics.median(worker) * 1e3:.1f} ms, child {statistics.median(child) * 1e3:.1f} ms; "
        f"slowest: worker {max(worker) * 1e3:.1f} ms, child {max(child) * 1e3:.1f} ms (of {rounds} rounds)"
    )


if __name__ == "__main__":
    main()
