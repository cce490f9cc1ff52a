"""`jitlab run`: measure workloads on backends over sizes, store the cells, show table and plot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from jitlab.backends.base import cpu_count
from jitlab.cli.app import app, console, err_console, json_option, progress_bar, store_option
from jitlab.compare.gate import gate_exit_code, validate_gate
from jitlab.engine.plan import execute_cells, missing_cells, parse_backends, parse_sizes, plan_cells
from jitlab.engine.spec import TimingPolicy
from jitlab.errors import UserError
from jitlab.report import formatting as fmt
from jitlab.report.export import run_json
from jitlab.report.table import print_run
from jitlab.store import Store
from jitlab.store.machine import machine_info
from jitlab.workloads.registry import load_workloads


@app.command("run")
@click.argument("target")
@click.option("--backends", default=None, help="comma-separated backend names (default: all)")
@click.option("--sizes", default=None, help="comma-separated sizes, e.g. 1e4,1e6 (default: the workload's)")
@store_option
@click.option("--threads", type=int, default=None, help="threads per backend (default: all cores)")
@click.option(
    "--timeout", type=float, default=600.0, show_default=True, help="seconds before a cell's worker is killed"
)
@click.option(
    "--budget",
    type=float,
    default=None,
    help="seconds of steady-state sampling per cell at most (default 5, or less where a workload says so)",
)
@click.option(
    "--target-ci",
    type=float,
    default=2.0,
    show_default=True,
    help="stop sampling when the 95% CI of the median is within ±this %",
)
@click.option(
    "--resume", type=int, default=None, metavar="RUN_ID", help="run only the cells of RUN_ID that are missing"
)
@json_option
@click.option("--plot/--no-plot", default=True, help="save the figure beside the store")
@click.option(
    "--full",
    is_flag=True,
    help="the workload's whole grid (every backend, the source document's sizes and variants)",
)
@click.option("--flush-l2", is_flag=True, help="on a CUDA device, flush the L2 cache before every timed call")
@click.option("--baseline", type=int, default=None, metavar="RUN_ID", help="compare with this run at the end")
@click.option(
    "--fail-above",
    type=float,
    default=None,
    metavar="PCT",
    help="exit 1 if a cell is significantly slower than --baseline by more than PCT % (default 5)",
)
def run_command(
    target: str,
    backends: str | None,
    sizes: str | None,
    store_path: str | None,
    threads: int | None,
    timeout: float,
    budget: float | None,
    target_ci: float,
    resume: int | None,
    as_json: bool,
    plot: bool,
    full: bool,
    flush_l2: bool,
    baseline: int | None,
    fail_above: float | None,
) -> int:
    """Measure TARGET (a built-in workload such as pi, or a .py file defining workloads) on every
    backend over a sweep of sizes, each cell in its own worker process."""
    if threads is not None and threads < 1:
        raise UserError(f"--threads {threads} is not a positive integer")
    if timeout <= 0 or (budget is not None and budget <= 0) or target_ci <= 0:
        raise UserError("--timeout, --budget and --target-ci must be positive numbers")
    size_list = parse_sizes(sizes)
    workloads = load_workloads(target)  # first: a workload file may register backends of its own
    if full:
        workloads = [workload.full_grid() for workload in workloads]
    backend_list = parse_backends(backends)
    store = Store(store_path)
    store.check_writable()
    validate_gate(store, baseline, fail_above)

    if resume is not None:
        if backends or sizes or threads is not None or full or flush_l2:
            raise UserError(
                "--resume measures the stored run's own backends, sizes and options: "
                "drop --backends/--sizes/--threads/--full/--flush-l2"
            )
        run = store.run(resume)
        if run.target != target and Path(run.target).resolve() != Path(target).resolve():
            raise UserError(
                f"run {resume} measured {run.target!r}, not {target!r}: give the same target to resume"
            )
        options = run.options
        policy = TimingPolicy(**options["policy"])
        if options.get("full"):
            workloads = [workload.full_grid() for workload in workloads]
        planned = plan_cells(
            workloads,
            list(run.backends) or None,
            list(run.sizes) if run.sizes else None,
            options["threads"],
            policy,
        )
        planned = missing_cells(store, resume, planned)
        run_id = resume
        timeout = options.get("timeout_s", timeout)
    else:
        if budget is None:  # the engine's default, or the shortest a workload asks for
            budget = min((w.default_budget_s for w in workloads if w.default_budget_s), default=5.0)
        policy = TimingPolicy(budget_s=budget, target_ci=target_ci / 100, flush_l2=flush_l2)
        thread_count = threads or cpu_count()
        options = {"policy": policy.__dict__, "threads": thread_count, "timeout_s": timeout}
        if full:
            options["full"] = True
        planned = plan_cells(workloads, backend_list, size_list, thread_count, policy)
        run_id = store.create_run(
            target=target,
            workloads=[w.name for w in workloads],
            backends=backend_list or [],
            sizes=size_list,
            options=options,
            machine=machine_info(Path(target).resolve().parent if target.endswith(".py") else Path.cwd()),
        )

    progress = progress_bar(f"run {run_id}", err_console)
    task = progress.add_task("", total=len(planned))

    def started(spec) -> None:
        params = f" · {fmt.params_label(spec.params)}" if spec.params else ""
        progress.update(
            task, description=f"{spec.workload} · {spec.backend} · n={fmt.size_label(spec.size)}{params}"
        )

    def finished(record) -> None:
        progress.advance(task)

    try:
        with progress:
            execute_cells(store, run_id, planned, timeout, started, finished)
    except KeyboardInterrupt:
        store.set_run_status(run_id, "interrupted")
        done = len(store.cells(run_id))
        err_console.print(
            f"interrupted: run {run_id} keeps its {done} finished cells; "
            f"`jitlab run {target} --resume {run_id}` measures the rest"
        )
        return 130
    store.set_run_status(run_id, "finished")

    run = store.run(run_id)
    cells = store.cells(run_id)
    from jitlab.report.plot import save_run_plots  # matplotlib: only when drawing

    plot_paths = save_run_plots(run, cells) if plot and any(c.ok for c in cells) else []
    from jitlab.report.speedup import save_derived_plots  # matplotlib: only when drawing

    plot_paths += save_derived_plots(run, cells) if plot_paths else []
    if as_json:
        print(json.dumps(run_json(run, cells)))
    else:
        print_run(console, run, cells)
        for path in plot_paths:
            console.print(f"plot: {path}")
        console.print(f"stored as run {run_id} in {store.path}")
    print_failure_logs(cells)
    return gate_exit_code(store, baseline, run_id, fail_above, err_console)


def print_failure_logs(cells) -> None:
    """With --debug: each failed cell's stored log (the worker's output tail and traceback), on stderr."""
    if os.environ.get("JITLAB_DEBUG") != "1":
        return
    for cell in cells:
        if cell.status == "failed" and cell.log:
            params = f" · {fmt.params_label(cell.params)}" if cell.params else ""
            err_console.rule(
                f"{cell.workload} · {cell.backend} · n={fmt.size_label(cell.size)}{params}: {cell.reason}"
            )
            err_console.print(cell.log, markup=False, highlight=False)
