"""Does jitlab agree with independent tools? Times the same three functions with jitlab, pyperf and
torch.utils.benchmark in one session and prints the medians side by side with their ratios.

    python benchmarks/agreement.py            # about 3 minutes on 2 cores
    python benchmarks/agreement.py --quick    # fewer processes and shorter budgets, about 1 minute

The functions: the sum of 10^6 float64 with NumPy, a 256x256 float32 matrix product with PyTorch, and
a 2 ms busy-wait (a `time.perf_counter()` loop). Every tool calls the very same Python function with
the same arguments, on one thread:

- jitlab: the engine as `jitlab run` uses it (this file is also a jitlab workload file), worker
  processes per cell, the median over all processes' samples;
- pyperf: `pyperf.Runner.bench_func` in its own worker processes (`agreement_pyperf.py`), the median
  of its values;
- torch.utils.benchmark: `Timer.blocked_autorange` in this process, its median.

Needs pyperf (`pip install -c constraints.txt 'jitlab[bench]'`) and torch. On a shared or loaded
machine the tools measure different moments of the machine's load, and their figures differ by
that too: read `jitlab selfcheck` before believing a disagreement.

Progress goes to stderr as it happens (a line as each tool starts and finishes each function, and
pyperf's own output), so a long run is never silent; stdout keeps the table or the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import jitlab

HERE = Path(__file__).resolve().parent
STARTED = time.perf_counter()
BUSY_WAIT_S = 0.002
MATMUL_N = 256
SUM_N = 10**6


def numpy_sum(x):
    return x.sum()


def torch_matmul(a):
    return a @ a


def busy_wait():
    end = time.perf_counter() + BUSY_WAIT_S
    while time.perf_counter() < end:
        pass


def sum_input():
    return np.random.default_rng(0).random(SUM_N)


def matmul_input():
    import torch

    torch.manual_seed(0)
    return torch.randn(MATMUL_N, MATMUL_N)


#: label -> (function, arguments builder, jitlab workload name, jitlab backend)
FUNCTIONS = {
    "numpy sum of 1e6 float64": (numpy_sum, lambda: (sum_input(),), "agree-numpy-sum", "numpy"),
    f"torch matmul {MATMUL_N}x{MATMUL_N} float32": (
        torch_matmul,
        lambda: (matmul_input(),),
        "agree-torch-matmul",
        "torch",
    ),
    "busy-wait 2 ms": (busy_wait, lambda: (), "agree-busy-wait", "python"),
}


def _workload(label: str) -> jitlab.Workload:
    fn, build, name, backend = FUNCTIONS[label]
    workload = jitlab.Workload(name, sizes=[1], seeds=1)

    @workload.implement(backend)
    def _(ctx):
        args = build()
        return jitlab.Prepared(fn, args=lambda seed: args)

    return workload


# module-level Workload objects: jitlab's worker processes load this file and find them
agree_numpy_sum, agree_torch_matmul, agree_busy_wait = (_workload(label) for label in FUNCTIONS)


def progress(message: str) -> None:
    """One line on stderr with the time since the start."""
    print(f"[{time.perf_counter() - STARTED:6.1f} s] {message}", file=sys.stderr, flush=True)


def time_with_jitlab(budget_s: float, processes: int) -> dict[str, float]:
    from jitlab.engine.runner import execute_cell
    from jitlab.engine.spec import CellSpec, TimingPolicy
    from jitlab.store.cell_rows import cell_from_result

    medians = {}
    for n, (label, (_, _, name, backend)) in enumerate(FUNCTIONS.items(), start=1):
        progress(
            f"jitlab: {label} ({n} of {len(FUNCTIONS)}; {processes} worker processes, {budget_s} s budget)"
        )
        spec = CellSpec(
            workload=name,
            backend=backend,
            size=1,
            source_file=str(Path(__file__).resolve()),
            threads=1,
            policy=TimingPolicy(budget_s=budget_s, processes=processes),
        )
        result = execute_cell(spec, timeout_s=600)
        if not result.ok:
            raise SystemExit(f"jitlab could not measure {label}: {result.status}: {result.reason}")
        record = cell_from_result(0, name, backend, 1, {}, result)
        medians[label] = record.summary.median
        progress(f"jitlab: {label}: median {_fmt(medians[label])}")
    return medians


def time_with_torch(min_run_time: float) -> dict[str, float]:
    import torch.utils.benchmark as tb

    medians = {}
    for n, (label, (fn, build, _, _)) in enumerate(FUNCTIONS.items(), start=1):
        progress(f"torch.utils.benchmark: {label} ({n} of {len(FUNCTIONS)}; at least {min_run_time} s)")
        timer = tb.Timer(stmt="fn(*args)", globals={"fn": fn, "args": build()}, num_threads=1, label=label)
        medians[label] = timer.blocked_autorange(min_run_time=min_run_time).median
        progress(f"torch.utils.benchmark: {label}: median {_fmt(medians[label])}")
    return medians


def time_with_pyperf(pyperf_args: list[str]) -> dict[str, float]:
    import pyperf

    with tempfile.TemporaryDirectory() as scratch:
        output = Path(scratch) / "pyperf.json"
        command = [sys.executable, str(HERE / "agreement_pyperf.py"), "-o", str(output), *pyperf_args]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        progress(
            f"pyperf: the {len(FUNCTIONS)} functions in its own worker processes "
            f"({' '.join(pyperf_args) or 'its defaults: 20 processes each'}); its progress follows"
        )
        # pyperf's own progress (a dot per worker process, a line per function) goes to our stderr
        done = subprocess.run(command, env=env, stdout=sys.stderr, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise SystemExit(f"pyperf failed ({done.returncode}):\n{done.stderr[-2000:]}")
        progress("pyperf: done")
        suite = pyperf.BenchmarkSuite.load(str(output))
        return {bench.get_name(): bench.median() for bench in suite.get_benchmarks()}


def _fmt(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds:.3g} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " "),  # the first paragraph
    )
    parser.add_argument("--quick", action="store_true", help="fewer processes, shorter budgets")
    parser.add_argument(
        "--smoke", action="store_true", help="as short as the tools allow: checks the script, not the figures"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    started = time.perf_counter()
    if args.smoke:
        budget, min_run_time, pyperf_args = 0.3, 0.05, ["-p", "1", "-n", "1", "-w", "0", "-l", "1"]
    elif args.quick:
        budget, min_run_time, pyperf_args = 1.5, 0.5, ["-p", "4", "-n", "3", "-l", "10"]
    else:
        budget, min_run_time, pyperf_args = 5.0, 2.0, []
    results = {
        "jitlab": time_with_jitlab(budget_s=budget, processes=3),
        "torch.utils.benchmark": time_with_torch(min_run_time=min_run_time),
        "pyperf": time_with_pyperf(pyperf_args),
    }
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    rows = []
    for label in FUNCTIONS:
        j, t, p = (results[tool][label] for tool in ("jitlab", "torch.utils.benchmark", "pyperf"))
        rows.append(
            {
                "function": label,
                "jitlab_s": j,
                "torch_s": t,
                "pyperf_s": p,
                "jitlab_over_torch": j / t,
                "jitlab_over_pyperf": j / p,
            }
        )
    if args.json:
        print(json.dumps({"rows": rows, "load_average": load, "seconds": time.perf_counter() - started}))
        return 0
    header = (
        f"{'function':32} {'jitlab':>11} {'torch.utils':>11} {'pyperf':>11} {'jl/torch':>9} {'jl/pyperf':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['function']:32} {_fmt(r['jitlab_s']):>11} {_fmt(r['torch_s']):>11} {_fmt(r['pyperf_s']):>11} "
            f"{r['jitlab_over_torch']:>9.3f} {r['jitlab_over_pyperf']:>9.3f}"
        )
    print(
        f"medians, one thread each; {time.perf_counter() - started:.0f} s in all"
        + (f"; load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}" if load else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
