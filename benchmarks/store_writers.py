"""Benchmark: concurrent writers into one results store, and a check that nothing is lost or mixed.

Each of WRITERS processes creates a run and stores CELLS cells in it, one transaction per cell, as
`jitlab run` does; then every run must hold exactly its own CELLS cells. Without a store URL it
starts a PostgreSQL server in a temporary folder (Debian's postgresql package, as the tests do).

    python benchmarks/store_writers.py [--writers 4] [--cells 200] [STORE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WRITER = REPO / "tests" / "store" / "concurrent_writer.py"


def measure(store_url: str, writers: int, cells: int) -> None:
    from jitlab.store import Store

    start = time.perf_counter()
    processes = [
        subprocess.Popen(
            [sys.executable, str(WRITER), store_url, f"w{i}", str(cells)], stdout=subprocess.PIPE, text=True
        )
        for i in range(writers)
    ]
    run_ids = []
    for process in processes:
        out, _ = process.communicate()
        if process.returncode != 0:
            raise SystemExit("a writer failed")
        run_ids.append(int(out))
    elapsed = time.perf_counter() - start
    store = Store(store_url, create=False)
    for i, run_id in enumerate(run_ids):
        got = store.cells(run_id)
        sizes = sorted(c.size for c in got)
        assert sizes == list(range(1, cells + 1)), f"run {run_id}: {len(got)} cells, duplicates or gaps"
        assert {c.params["tag"] for c in got} == {f"w{i}"}, f"run {run_id} holds another writer's cells"
    total = writers * cells
    print(
        f"{store.location.display}: {writers} writers x {cells} cells = {total} cells, every one present once"
    )
    print(f"{elapsed:.1f} s wall ({total / elapsed:.0f} cells/s, process start-up included); "
          f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("store", nargs="?", default=None)
    options = parser.parse_args()
    if options.store:
        measure(options.store, options.writers, options.cells)
        return
    sys.path.insert(0, str(REPO / "tests"))
    from postgres_testing import postgres_server

    with postgres_server() as server:
        measure(server.create_database(), options.writers, options.cells)


if __name__ == "__main__":
    main()
