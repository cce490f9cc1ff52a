"""How long a pair of builds takes on a busy machine, and what it says: `jitlab run NEW --against OLD`
(the default: rounds until the verdict is clear, up to 80) beside CPU-bound processes, for the same
build against a copy of itself and a 5% slower build against the old one.

    python benchmarks/busy_pairs.py OUT [PAIRS] [HOGS]

Each run gets its own HOGS (default 2) processes `python -c "while True: pass"`, bounded by
`timeout 300` and ended by their pid when the run is done. Prints one JSON line per run: seconds,
the rounds each build measured, the rounds the comparison paired, the verdict and its reason;
OUT/store.sqlite keeps the runs (for `benchmarks/busy_rounds.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from loaded_verdicts import WALL_SIZE, Hogs, build_file


def measure(out: Path, name: str, new: str, old: str, hogs: int) -> dict[str, object]:
    store = out / "store.sqlite"
    command = [
        sys.executable, "-m", "jitlab", "run", new, "--against", old, "--backends", "python", "--sizes",
        WALL_SIZE, "--budget", "0.5", "--store", str(store), "--no-plot", "--json",
    ]  # fmt: skip
    with Hogs(hogs, limit_s=300):
        start = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})
        seconds = time.monotonic() - start
    (out / f"{name}.log").write_text(done.stdout + "\n---\n" + done.stderr)
    data = json.loads(done.stdout)
    (cell,) = data["cells"]
    (compared,) = data["against"]["cells"]
    return {
        "build": name,
        "seconds": round(seconds, 1),
        "rounds": cell["processes"],
        "paired_rounds": compared["processes"][0] if compared["basis"] == "paired rounds" else 0,
        "verdict": compared["verdict"],
        "ratio": compared["ratio"],
        "reason": compared["reason"],
        "stopped": [w for w in cell["warnings"] if "stopped before its budget" in w],
    }


def main(out: Path, pairs: int, hogs: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    folder = out / "builds"
    folder.mkdir(exist_ok=True)
    old, copy, slower = (build_file(folder, n, f) for n, f in (("old", 1.0), ("copy", 1.0), ("slower", 1.05)))
    for index in range(pairs):
        for name, new in ((f"slower{index}", slower), (f"copy{index}", copy)):
            print(json.dumps(measure(out, name, new, old, hogs)), flush=True)


if __name__ == "__main__":
    main(
        Path(sys.argv[1]),
        int(sys.argv[2]) if len(sys.argv) > 2 else 1,
        int(sys.argv[3]) if len(sys.argv) > 3 else 2,
    )
