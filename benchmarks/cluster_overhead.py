"""Benchmark: what a Ray cluster costs and gains for a sweep, on a local cluster of two 1-CPU nodes.

Starts `ray.cluster_utils.Cluster` (a head with no CPUs, nodes node-a and node-b with one CPU each),
then times `jitlab run benchmarks/cluster_sweep.py` (100 cells of about 50 ms of timing each) three
ways, as a user would run them:

1. locally, without --cluster (one cell after another on this machine);
2. on one node (`--cluster ADDRESS --nodes node-a`);
3. on both nodes (`--cluster ADDRESS --spread`, each cell once, on whichever node is free).

Scheduling overhead per cell = (time on one node - time locally) / cells. Speed-up of two nodes =
time on two nodes / time on one node. On a 2-core machine the two nodes share the machine's cores
with everything else running: say how loaded it was next to the figures.

    python benchmarks/cluster_overhead.py [--cells 100] [--budget 0.05]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "cluster_sweep.py"


def timed_run(args: list[str], store: Path) -> float:
    command = [sys.executable, "-m", "jitlab", "run", str(WORKLOAD), "--backends", "python", "--no-plot"]
    start = time.perf_counter()
    result = subprocess.run([*command, *args, "--store", str(store)], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"jitlab run failed:\n{result.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--budget", type=float, default=0.05)
    options = parser.parse_args()
    from ray.cluster_utils import Cluster

    sizes = ",".join(str(n) for n in range(1, options.cells + 1))
    common = ["--sizes", sizes, "--budget", str(options.budget)]
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        for name in ("node-a", "node-b"):
            cluster.add_node(num_cpus=1, labels={"machine": name})
        cluster.wait_for_nodes()
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            load_before = os.getloadavg()
            local = timed_run(common, folder / "local.sqlite")
            one = timed_run(
                [*common, "--cluster", cluster.address, "--nodes", "node-a"], folder / "one.sqlite"
            )
            two = timed_run([*common, "--cluster", cluster.address, "--spread"], folder / "two.sqlite")
            load_after = os.getloadavg()
    finally:
        cluster.shutdown()
    cells = options.cells
    print(f"{cells} cells, --budget {options.budget:g}, machine: {os.cpu_count()} CPUs")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"locally (no cluster):      {local:7.1f} s  ({local / cells:.2f} s per cell)")
    print(f"one node  (--nodes node-a): {one:7.1f} s  ({one / cells:.2f} s per cell)")
    print(f"two nodes (--spread):      {two:7.1f} s  ({two / cells:.2f} s per cell)")
    print(f"scheduling overhead per cell on one node: {(one - local) / cells:+.2f} s (target <= 1 s)")
    print(f"two nodes / one node: {two / one:.2f}x (target < 0.6x)")


if __name__ == "__main__":
    main()
