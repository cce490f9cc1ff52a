"""`jitlab history WORKLOAD`: a cell's median over every stored run, per machine, with step changes."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from jitlab import formatting as fmt
from jitlab.cli.app import app, console, json_option, store_option, with_envelope
from jitlab.engine.plan import parse_size
from jitlab.errors import UserError
from jitlab.formatting import params_label
from jitlab.history.changepoint import DEFAULT_MIN_SIZE
from jitlab.history.series import History, HistorySeries, load_history
from jitlab.store import Store
from jitlab.store.identity import machine_label


def _steps_text(series: HistorySeries) -> Text:
    if len(series.points) < 2 * DEFAULT_MIN_SIZE:
        return Text(f"needs {2 * DEFAULT_MIN_SIZE} runs at least", style="dim")
    if not series.steps:
        return Text("none", style="dim")
    text = Text()
    for i, step in enumerate(series.steps):
        if i:
            text.append(", ")
        text.append(
            f"run {step.run_id}: {step.change:+.1%}", style="bold red" if step.change > 0 else "bold green"
        )
    return text


def _print_series(series: HistorySeries) -> None:
    table = Table(title=f"{series.workload} · {series.label}", title_justify="left")
    for column in ("run", "started", "median", "95% CI", "samples", "commit"):
        table.add_column(column)
    table.add_column("change", no_wrap=True)  # the run where a step in the median begins
    starts = {step.run_id: step for step in series.steps}
    for p in series.points:
        step = starts.get(p.run_id)
        table.add_row(
            str(p.run_id),
            p.created_at[:16].replace("T", " "),
            fmt.seconds(p.median_s),
            f"{fmt.seconds(p.ci_low_s)} … {fmt.seconds(p.ci_high_s)}",
            str(p.samples),
            (p.commit or "-")[:8],
            Text(f"step {step.change:+.1%} begins", style="bold") if step else Text(""),
        )
    console.print(table)
    if len(series.points) < 2 * DEFAULT_MIN_SIZE:
        console.print(Text(f"step detection needs {2 * DEFAULT_MIN_SIZE} runs at least", style="dim"))


def _print_overview(history: History) -> None:
    several = len({s.machine for s in history.series}) > 1
    table = Table(title=f"{history.workload}: history per cell", title_justify="left")
    if several:
        table.add_column("machine")
    for column in ("backend", "n", "params", "runs", "first", "latest", "steps (run where each began)"):
        table.add_column(column)
    for s in history.series:
        table.add_row(
            *([Text(s.machine)] if several else []),
            Text(s.backend),
            fmt.size_label(s.size),
            Text(params_label(s.params) or "-"),
            str(len(s.points)),
            fmt.seconds(s.points[0].median_s),
            fmt.seconds(s.points[-1].median_s),
            _steps_text(s),
        )
    console.print(table)


def history_machines(store: Store, history: History) -> list[dict]:
    """The metadata of the machines whose cells make up `history` (for the JSON envelope)."""
    wanted = {s.machine for s in history.series}
    found: dict[str, dict] = {}
    for cell in store.cells_where(workload=history.workload):
        label = machine_label(cell.machine)
        if label in wanted and label not in found:
            found[label] = cell.machine
    return [found[label] for label in sorted(found)]


@app.command("history")
@click.argument("workload")
@click.option("--backend", default=None, help="only this backend")
@click.option("--size", default=None, help="only this size, e.g. 1e6")
@click.option(
    "--plot", "plot_path", default=None, metavar="FILE", help="save the history figure (PNG/SVG/PDF)"
)
@click.option(
    "--penalty",
    type=float,
    default=1.0,
    show_default=True,
    help="scale of the change-point penalty (higher: fewer steps)",
)
@click.option(
    "--machine",
    default=None,
    metavar="NAME",
    help="only this machine's series: a name given to `jitlab run --machine`, or a fingerprint "
    "(as `jitlab history` names machines)",
)
@store_option
@json_option
def history_command(
    workload: str,
    backend: str | None,
    size: str | None,
    plot_path: str | None,
    penalty: float,
    machine: str | None,
    store_path: str | None,
    as_json: bool,
) -> None:
    """Show WORKLOAD's median over all stored runs, per machine, oldest first, with the step changes
    a change-point method (PELT) finds and the run where each began."""
    if penalty <= 0:
        raise UserError(f"--penalty {penalty:g} must be positive")
    store = Store(store_path, create=False)
    history = load_history(
        store, workload, backend, parse_size(size) if size else None, machine=machine, penalty_scale=penalty
    )
    if plot_path:
        try:
            from jitlab.history.plot import save_history_plot  # matplotlib: only when plotting

            save_history_plot(history, Path(plot_path))
        except (OSError, ValueError) as exc:
            raise UserError(f"cannot write the plot {plot_path}: {exc}") from exc
    if as_json:
        machines = history_machines(store, history)
        print(json.dumps(with_envelope("history", history.to_json(), machines=machines)))
        return
    several = len({s.machine for s in history.series}) > 1
    console.print(Text(f"machine{'s' if several else ''} {history.machine}", style="dim"))
    if len(history.series) == 1:
        _print_series(history.series[0])
    else:
        _print_overview(history)
    if history.other_machine_runs:
        runs = ", ".join(map(str, history.other_machine_runs))
        console.print(Text(f"left out: runs {runs} (other machines, --machine)", style="dim"))
    if plot_path:
        console.print(f"plot: {plot_path}")
