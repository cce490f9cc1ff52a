"""`jitlab run`: measure workloads on backends over sizes, store the cells, show table and plot."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from jitlab import formatting as fmt
from jitlab.cli import exit_codes
from jitlab.cli.against import check_against_options, load_against
from jitlab.cli.app import (
    app,
    console,
    err_console,
    json_option,
    say_store_waits,
    store_option,
    store_retry_option,
    with_envelope,
)
from jitlab.cli.cluster_options import check_cluster_options, cluster_options, connect_cluster
from jitlab.cli.measure_option import check_instruction_counting, measure_option
from jitlab.compare.gate import check_gate_machines, gate_exit_code, validate_gate
from jitlab.compare.runs import compare_runs
from jitlab.compare.table import print_comparison
from jitlab.engine.plan import execute_cells, parse_backends, parse_sizes
from jitlab.engine.session import (
    DEFAULT_PROCESSES,
    DEFAULT_TARGET_CI_PCT,
    FAST_BUDGET_S,
    FAST_PROCESSES,
    FAST_TARGET_CI_PCT,
    PlannedRun,
    RunRequest,
    plan_new_run,
    plan_resumed_run,
    run_to_resume,
    stored_cluster_settings,
)
from jitlab.engine.spec import INSTRUCTIONS, TimingPolicy
from jitlab.errors import UserError
from jitlab.report.envelope import run_machines
from jitlab.report.export import run_json
from jitlab.report.table import print_run
from jitlab.store import Store
from jitlab.store.identity import machine_label
from jitlab.store.machine import machine_info
from jitlab.store.outages import StoreUnreachable
from jitlab.workloads.registry import load_workloads

if TYPE_CHECKING:
    from jitlab.engine.cluster import Cluster


@app.command("run")
@click.argument("target")
@click.option("--backends", default=None, help="comma-separated backend names (default: all)")
@click.option("--sizes", default=None, help="comma-separated sizes, e.g. 1e4,1e6 (default: the workload's)")
@store_option
@store_retry_option
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
    default=None,
    help=f"stop sampling when the 95% CI of the median is within ±this % (default {DEFAULT_TARGET_CI_PCT:g}; "
    f"{FAST_TARGET_CI_PCT:g} with --fast)",
)
@click.option(
    "--fast",
    is_flag=True,
    help=f"a quick look: {FAST_PROCESSES} process per cell, a {FAST_BUDGET_S:g} s budget, a "
    f"±{FAST_TARGET_CI_PCT:g}% target (explicit options win); marked in the run, and `compare` "
    "gives it a wider noise floor",
)
@click.option(
    "--processes",
    default=None,
    metavar="N[..MAX]",
    help=f"worker processes per cell, sharing its budget (default {DEFAULT_PROCESSES}; "
    "fewer when a call or the start-up is too slow for N); N..MAX adds processes to a cell, one per "
    "round, while its 95% interval is wider than --target-ci, up to MAX (e.g. --processes 3..40)",
)
@click.option(
    "--resume", default=None, metavar="RUN_ID", help="run only the cells of RUN_ID that are missing or failed"
)
@json_option
@click.option("--plot/--no-plot", default=True, help="save the figure beside the store")
@click.option(
    "--full",
    is_flag=True,
    help="the workload's whole grid (every backend, the source document's sizes and variants)",
)
@click.option("--flush-l2", is_flag=True, help="on a CUDA device, flush the L2 cache before every timed call")
@click.option("--baseline", default=None, metavar="RUN_ID", help="compare with this run at the end")
@click.option(
    "--against",
    default=None,
    metavar="OLD",
    help="another build of TARGET (a .py file with workloads of the same names): measured side by side "
    "with TARGET in every round, stored as a run of its own and compared per round, which takes the "
    "machine's drift out; rounds are added (up to 80, or --processes N..MAX) until the verdict is clear; "
    "--fail-above gates on it",
)
@click.option(
    "--fail-above",
    type=float,
    default=None,
    metavar="PCT",
    help="exit 1 if a cell is significantly slower than --baseline (or --against) by more than PCT % (default 5)",
)
@click.option(
    "--machine",
    "machine_name",
    default=None,
    metavar="NAME",
    help="name this machine for comparisons and history (default $JITLAB_MACHINE; else its hardware)",
)
@click.option(
    "--details",
    is_flag=True,
    help="also print first call, error, dispatch and memory tables, and each backend's device and timing method",
)
@click.option(
    "--strict",
    is_flag=True,
    help="exit 1 if any cell failed or timed out, or a backend named in --backends is unavailable",
)
@measure_option
@cluster_options
def run_command(
    target: str,
    backends: str | None,
    sizes: str | None,
    store_path: str | None,
    store_retry: float,
    threads: int | None,
    timeout: float,
    budget: float | None,
    target_ci: float | None,
    fast: bool,
    processes: str | None,
    resume: str | None,
    as_json: bool,
    plot: bool,
    full: bool,
    flush_l2: bool,
    baseline: str | None,
    against: str | None,
    fail_above: float | None,
    machine_name: str | None,
    details: bool,
    strict: bool,
    cluster: str | None,
    nodes: str | None,
    spread: bool,
    share_cores: bool,
    measure: str,
) -> int:
    """Measure TARGET (a built-in workload such as pi, or a .py file defining workloads) on every
    backend over a sweep of sizes, each cell in its own worker process."""
    if threads is not None and threads < 1:
        raise UserError(f"--threads {threads} is not a positive integer")
    if timeout <= 0 or (budget is not None and budget <= 0) or (target_ci is not None and target_ci <= 0):
        raise UserError("--timeout, --budget and --target-ci must be positive numbers")
    processes_count, processes_max = parse_processes(processes)
    size_list = parse_sizes(sizes)
    workloads = load_workloads(target)  # first: a workload file may register backends of its own
    if full:
        workloads = [workload.full_grid() for workload in workloads]
    backend_list = parse_backends(backends)
    check_cluster_options(cluster, nodes, spread, share_cores)
    old_workloads: list = []
    if against is not None:
        check_against_options(resume, baseline, cluster)
        old_workloads = load_against(against, target, workloads)
    threads_given = threads is not None
    if measure == INSTRUCTIONS:
        threads = _instruction_threads(backend_list, cluster, threads)
    if cluster and machine_name:
        raise UserError(
            "--machine names this machine, which measures nothing on a cluster: name the nodes with "
            "Ray's `machine` label (`ray start ... --labels machine=NAME`)"
        )
    resumed = None
    if resume is not None:
        _refuse_with_resume(
            {
                "--backends": backends, "--sizes": sizes, "--threads": threads_given,
                "--processes": processes, "--budget": budget is not None, "--target-ci": target_ci is not None,
                "--fast": fast, "--full": full, "--flush-l2": flush_l2, "--nodes": nodes, "--spread": spread,
                "--share-cores": share_cores, "--machine": machine_name, "--measure": measure != "wall",
            }
        )  # fmt: skip
        store = Store(store_path, create=False, retry_s=store_retry, on_wait=say_store_waits)
        resumed = run_to_resume(store, resume, target, on_cluster=bool(cluster))
        if resumed.run_options.cluster or cluster:
            nodes, spread, share_cores, threads = stored_cluster_settings(resumed)
    # the cluster before the store: an unreachable one is refused before anything is written
    setup = connect_cluster(cluster, nodes, spread, share_cores, threads)
    try:
        if resumed is None:
            store = Store(store_path, retry_s=store_retry, on_wait=say_store_waits)
        store.check_writable()
        validate_gate(store, baseline, fail_above, against is not None)
        machine = machine_info(
            Path(target).resolve().parent if target.endswith(".py") else Path.cwd(), name=machine_name
        )
        measured_on = [setup.label(n) for n in setup.nodes] if setup else [machine_label(machine)]
        check_gate_machines(store, baseline, measured_on)
        if resumed is not None:
            if TimingPolicy(**resumed.run_options.policy).measure == INSTRUCTIONS:
                check_instruction_counting(None, cluster)
            plan = plan_resumed_run(store, resumed, workloads, timeout, setup)
        else:
            request = RunRequest(
                target=target,
                workloads=tuple(workloads),
                backends=tuple(backend_list) if backend_list else None,
                sizes=tuple(size_list) if size_list else None,
                threads=threads,
                timeout_s=timeout,
                budget_s=budget,
                target_ci_pct=target_ci,
                fast=fast,
                processes=processes_count,
                max_processes=processes_max,
                full=full,
                flush_l2=flush_l2,
                measure=measure,
                against=against,
                against_workloads=tuple(old_workloads),
            )
            cluster_stored = setup.options(cluster, nodes) if setup is not None else None
            plan = plan_new_run(store, request, machine, cluster_stored)
        try:
            return _measure(store, plan, target, setup, plot, as_json, baseline, fail_above, details, strict)
        except StoreUnreachable as exc:
            cluster_hint = " --cluster ADDRESS" if setup else ""
            exc.advice = (
                f"run {plan.run_id} keeps every cell written before; once the server is back, "
                f"`jitlab run {target} --resume {plan.run_id}{cluster_hint}` measures the rest"
            )
            raise
    finally:
        if setup is not None:
            setup.close()


def _instruction_threads(backend_list: list[str] | None, cluster: str | None, threads: int | None) -> int:
    """`--measure instructions` counts one thread: the backends and the cluster checked for it."""
    check_instruction_counting(backend_list, cluster)
    if threads not in (None, 1):
        raise UserError(f"--measure instructions counts one thread: drop --threads {threads}")
    return 1


def _refuse_with_resume(given: dict[str, object]) -> None:
    """`--resume` measures the stored run's own options: any option given beside it is refused."""
    extra = [name for name, value in given.items() if value]
    if extra:
        raise UserError(
            "--resume measures the stored run's own backends, sizes, options and nodes on its "
            f"machines: drop {'/'.join(extra)}"
        )


def _measure(
    store: Store,
    plan: PlannedRun,
    target: str,
    setup: Cluster | None,
    plot: bool,
    as_json: bool,
    baseline: str | None,
    fail_above: float | None,
    details: bool = False,
    strict: bool = False,
) -> int:
    """Measure the planned cells, then show the run and apply the gate and, with `strict`, fail on
    any failed cell. With `--against` the other build's run, measured in the same rounds, is shown
    compared with this one, and is the gate's baseline."""
    run_id, planned, timeout, paired_with = plan.run_id, list(plan.cells), plan.timeout_s, plan.paired_with
    if paired_with is not None:
        baseline = str(paired_with)
    from jitlab.cli.live import LiveRun

    view = LiveRun(err_console, store.run(run_id), len(planned))
    try:
        with view:
            execute_cells(
                store,
                run_id,
                planned,
                timeout,
                cluster=setup,
                on_start_at=view.started,
                on_plan=view.plan,
                on_progress=view.advance,
                on_result=view.result,
            )
    except KeyboardInterrupt:
        store.retrying.limit_s = 0.0  # Ctrl-C: no more waiting for a store that went away
        try:
            for interrupted in [run_id] + ([paired_with] if paired_with is not None else []):
                store.set_run_status(interrupted, "interrupted")
            kept = f"its {len(store.cells(run_id))} finished cells"
        except StoreUnreachable:
            kept = "every cell written before the store became unreachable"
        rest = (
            f"`jitlab run {target} --resume {run_id}{' --cluster ADDRESS' if setup else ''}` measures the rest"
            if paired_with is None
            else f"run {paired_with} keeps the other build's; measure both again to compare them side by side"
        )
        err_console.print(f"interrupted: run {run_id} keeps {kept}; {rest}")
        return exit_codes.INTERRUPTED
    store.set_run_status(run_id, "finished")
    if paired_with is not None:
        store.set_run_status(paired_with, "finished")

    run = store.run(run_id)
    cells = store.cells(run_id)
    from jitlab.report.plot import save_run_plots  # matplotlib: only when drawing

    plot_paths = save_run_plots(run, cells) if plot and any(c.ok and c.samples_s for c in cells) else []
    from jitlab.report.speedup import save_derived_plots  # matplotlib: only when drawing

    plot_paths += save_derived_plots(run, cells) if plot_paths else []
    if as_json:
        envelope = with_envelope("run", {}, machine=run.machine, machines=run_machines(run, cells))
        paired = (
            {} if paired_with is None else {"against": compare_runs(store, paired_with, run_id).to_json()}
        )
        print(json.dumps({**envelope, **run_json(run, cells), **paired}))
    else:
        print_run(console, run, cells, details=details)
        for path in plot_paths:
            console.print(f"plot: {path}")
        if paired_with is not None:
            print_comparison(console, compare_runs(store, paired_with, run_id))
        console.print(
            f"stored as run {run_id} in {store.path}"
            + (f" (the other build as run {paired_with})" if paired_with is not None else "")
        )
    print_failure_logs(cells)
    code = gate_exit_code(store, baseline, run_id, fail_above, err_console)
    verdict = exit_codes.run_verdict(cells, strict, run.backends)
    if verdict:
        exit_codes.report_failure(f"{verdict}: exit code 1")
        code = exit_codes.CHECK_FAILED
    return code


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


def parse_processes(value: str | None) -> tuple[int | None, int]:
    """`--processes N` or `N..MAX`: (N or None for the default, MAX or 0 for no adding)."""
    if value is None:
        return None, 0
    first, dots, last = value.partition("..")
    try:
        count, most = int(first), int(last) if dots else 0
    except ValueError:
        count = most = -1
    if count < 1 or (dots and most < count):
        raise UserError(
            f"--processes {value} is not a positive integer or a range N..MAX with MAX at least N: "
            "give e.g. 3, or 3..40"
        )
    return count, most
