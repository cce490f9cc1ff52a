"""The terminal table of a run: backends as rows, sizes as columns, one cell per measurement."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from jitlab import formatting as fmt
from jitlab.report import folding
from jitlab.report.fastest import fastest_lines, run_fastest
from jitlab.report.speedup import print_derived
from jitlab.stats.comparison import FAST_NOISE_FLOOR
from jitlab.store import CellRecord, RunRecord
from jitlab.store.identity import by_machine, machine_naming

STATUS_STYLE = {"failed": "red", "timeout": "red", "unavailable": "dim", "inconsistent": "red"}


def cell_text(cell: CellRecord) -> Text:
    """One line per cell: the median with its 95% CI half-width, and one symbol for its most
    important warning (`jitlab.report.folding`). A CI wider than the value is left out: the folded
    line below the table says why."""
    if not cell.ok:
        return Text(cell.status, style=STATUS_STYLE.get(cell.status, ""))
    if cell.instructions:
        return instructions_text(cell)
    s = cell.summary
    text = Text()
    text.append(fmt.seconds(s.median), style="bold")
    if s.count < 6:
        text.append(" (few samples)")
    elif not folding.wide(cell):
        text.append(f" ±{s.ci_half_width:.1%}")
    return with_symbol(text, cell)


def with_symbol(text: Text, cell: CellRecord) -> Text:
    """`text` and the one symbol of the cell's most important warning, if it has one."""
    symbol = folding.cell_symbol(cell)
    if symbol:
        text.append(f" {symbol}", style="yellow")
    return text


def instructions_text(cell: CellRecord) -> Text:
    """Instructions per call counted under Valgrind, with the CI's half-width."""
    s = cell.instruction_summary
    assert s is not None
    text = Text(fmt.si(s.median, "instr"), style="bold")
    if s.count >= 2 and s.ci_half_width < 1.0:
        text.append(f" ±{s.ci_half_width:.2%}")
    return with_symbol(text, cell)


def cpu_text(cell: CellRecord) -> Text:
    """CPU time per call beside the wall time, and the share of the wall time it is (a process
    that waited for a CPU shows a lower share)."""
    cpu = cell.cpu_summary
    if not cell.ok or cpu is None or not cell.samples_s:
        return Text("-", style="dim")
    share = cpu.median / cell.summary.median if cell.summary.median else float("nan")
    return Text(f"{fmt.seconds(cpu.median)} ({share:.0%} of wall)")


def first_call_text(cell: CellRecord) -> Text:
    if not cell.ok:
        return Text("-", style="dim")
    return Text(fmt.seconds(cell.first_call_s))


def error_text(cell: CellRecord) -> Text:
    if not cell.ok or cell.error is None:
        return Text("-", style="dim")
    text = Text(f"{fmt.sci(cell.error)}")
    if cell.expected_error:
        ratio = cell.error / cell.expected_error
        text.append(f" ({ratio:.1f}σ)", style="red" if ratio > 3 else "")
    return text


def dispatch_text(cell: CellRecord) -> Text:
    if not cell.ok or cell.dispatch_s is None:
        return Text("-", style="dim")
    return Text(fmt.seconds(cell.dispatch_s), style="cyan")


def noise_text(cell: CellRecord) -> Text:
    """How far one worker process's median strayed from the cell's, and how many processes; a floor
    beyond 100% is a word, not a number."""
    if not cell.ok or not cell.samples_s or cell.noise_floor is None:
        return Text("-", style="dim")
    if cell.noise_floor >= 1.0:
        return Text(f"unresolved: processes >100% apart ({cell.processes} proc)", style="yellow")
    return Text(f"±{cell.noise_floor:.1%} ({cell.processes} proc)")


def memory_text(cell: CellRecord) -> Text:
    if not cell.ok or not cell.peak_rss_bytes:
        return Text("-", style="dim")
    text = Text(fmt.nbytes(cell.peak_rss_bytes))
    if cell.peak_device_bytes:
        text.append(f" + {fmt.nbytes(cell.peak_device_bytes)} device")
    return text


#: the tables behind --details: (title, what one cell shows, shown only when some cell has a value)
DETAIL_TABLES: tuple[tuple[str, Callable[[CellRecord], Text], Callable[[CellRecord], bool]], ...] = (
    ("first call (compile + run)", first_call_text, lambda c: c.ok),
    ("error: RMS over seeds (kσ: in sampling theory's σ)", error_text, lambda c: c.error is not None),
    ("dispatch: time for the call to return", dispatch_text, lambda c: c.dispatch_s is not None),
    (
        "CPU time per call (backends running one thread; a preempted process keeps its CPU time)",
        cpu_text,
        lambda c: c.cpu_summary is not None,
    ),
    (
        "noise floor: how far one worker process's median strayed (the smallest change compare calls)",
        noise_text,
        lambda c: bool(c.samples_s) and c.noise_floor is not None,
    ),
    ("peak memory of the worker", memory_text, lambda c: bool(c.peak_rss_bytes)),
)


def _groups(cells: Sequence[CellRecord]) -> dict[tuple[str, str, str], list[CellRecord]]:
    """Cells by (workload, parameters, machine); the machine is "" when one machine measured all."""
    machines = by_machine(cells)
    groups: dict[tuple[str, str, str], list[CellRecord]] = {}
    for machine, on_machine in machines.items():
        for cell in on_machine:
            groups.setdefault((cell.workload, fmt.params_label(cell.params), machine), []).append(cell)
    return (
        dict(sorted(groups.items(), key=lambda item: (item[0][0], item[0][2])))
        if len(machines) > 1
        else groups
    )


def run_tables(
    run: RunRecord,
    cells: Sequence[CellRecord],
    render: Callable[[CellRecord], Text] = cell_text,
    what: str = "median ±95% CI",
) -> list[Table]:
    """One table per workload, parameter values and machine: backends as rows, sizes as columns."""
    tables = []
    for (workload, params, machine), group in _groups(cells).items():
        sizes = sorted({c.size for c in group})
        backends = list(dict.fromkeys(c.backend for c in group))
        title = f"run {run.run_id} · {workload}" + (f" ({params})" if params else "")
        title += (f" · on {machine}" if machine else "") + f" · {what}"
        table = Table(title=title, title_justify="left", min_width=len(title))
        table.add_column("backend", style="bold")
        for size in sizes:
            table.add_column(f"n={fmt.size_label(size)}", justify="right")
        by_key = {(c.backend, c.size): c for c in group}
        for backend in backends:
            row = [Text(backend)]
            for size in sizes:
                cell = by_key.get((backend, size))
                row.append(render(cell) if cell else Text("-", style="dim"))
            table.add_row(*row)
        tables.append(table)
    return tables


def notes(cells: Sequence[CellRecord], details: bool = False) -> list[Text]:
    """Failed and unavailable cells with their reasons, then the warnings folded by cause (with
    `details`, also every cell's own warnings), below the tables."""
    lines: list[Text] = []
    machine = machine_naming(cells)
    reasons: dict[tuple[str, str, str], list[str]] = {}
    for cell in cells:
        if not cell.ok and cell.reason:
            where = f" on {machine(cell)}" if machine(cell) else ""
            reasons.setdefault((cell.backend + where, cell.status, cell.reason), []).append(
                fmt.size_label(cell.size)
            )
    for (backend, status, reason), sizes in reasons.items():
        lines.append(
            Text(f"{backend} {status} at n={','.join(sizes)}: {reason}", style=STATUS_STYLE.get(status, ""))
        )
    lines += [Text(line, style="yellow") for line in folding.folded_lines(cells)]
    for cell in cells if details else ():
        if cell.warnings:
            where = f"{cell.backend} n={fmt.size_label(cell.size)}" + (
                f" {fmt.params_label(cell.params)}" if cell.params else ""
            )
            where += f" on {machine(cell)}" if machine(cell) else ""
            lines.append(Text(f"! {where}: " + "; ".join(cell.warnings), style="yellow"))
    return lines


def device_lines(cells: Sequence[CellRecord]) -> list[Text]:
    """With --details: the device each backend computed on and how its samples were timed (host
    clock, CUDA events), one line per device and method; cells of older stores know no method."""
    backends_of: dict[tuple[str, str | None], list[str]] = {}
    for cell in cells:
        if cell.ok and cell.device:
            names = backends_of.setdefault((cell.device, cell.timing_method), [])
            if cell.backend not in names:
                names.append(cell.backend)
    return [
        Text(f"{', '.join(names)}: on {device}" + (f", timed with {method}" if method else ""), style="dim")
        for (device, method), names in backends_of.items()
    ]


FAST_NOTE = (
    "a quick look (--fast): fewer processes and a looser target than a default run; its noise floor is "
    f"not measured, and `jitlab compare` calls a change only beyond ±{FAST_NOISE_FLOOR:.0%}"
)


def drift_lines(cells: Sequence[CellRecord]) -> list[Text]:
    """With --details: the canary's drift on each machine, and its fastest and slowest readings."""
    lines = []
    for machine, drift in folding.drift_by_machine(cells).items():
        probes = ", ".join(
            f"{'pure Python' if name == 'python_s' else 'NumPy'} {drift.by_probe[name]:.0%} "
            f"(fastest {fmt.seconds(drift.fastest[name])})"
            for name in drift.by_probe
        )
        where = f" on {machine}" if machine else ""
        lines.append(
            Text(
                f"machine speed{where} (drift canary, {drift.readings} readings before worker processes): "
                f"drifted {drift.drift:.0%}; by probe: {probes}",
                style="dim",
            )
        )
    return lines


LEGEND = (
    "steady-state time per call: median ±95% CI half-width; "
    + ", ".join(
        f"{c.symbol} {c.key}" for c in folding.CAUSES if c.key in ("partial", "disagree", "fewer", "other")
    )
    + ": see below"
)
COUNTED_LEGEND = (
    "instructions per call, counted under Valgrind (Callgrind) around the calls only: the same under any "
    "load; `jitlab compare` of two such runs compares the counts"
)
DETAILS_HINT = "first call, error, dispatch, noise floor and memory per cell: --details"


def print_run(console: Console, run: RunRecord, cells: Sequence[CellRecord], details: bool = False) -> None:
    """The run at a glance: the time table, derived tables, who won; with `details`, the first call,
    error, dispatch and memory tables too."""
    counted = any(c.instructions for c in cells)
    for table in run_tables(
        run, cells, what="instructions per call ±95% CI" if counted else "median ±95% CI"
    ):
        console.print(table)
    if details:
        for what, render, shown in DETAIL_TABLES:
            if any(c.ok and shown(c) for c in cells):
                for table in run_tables(run, cells, render, what):
                    console.print(table)
        for line in device_lines(cells):
            console.print(line)
        from jitlab.report.limits import print_limits  # reads the machine's cached peaks

        print_limits(console, run, cells)
    print_derived(console, run, cells)  # speed-ups and rates, for workloads that declare them
    if run.run_options.fast:
        console.print(Text(FAST_NOTE, style="bold yellow"))
    legend = COUNTED_LEGEND if counted else LEGEND
    console.print(Text(legend if details else f"{legend} · {DETAILS_HINT}", style="dim"))
    if details:
        for line in drift_lines(cells):
            console.print(line)
    extra = notes(cells, details)
    if extra:
        console.print(Group(*extra))
    for line in fastest_lines(run_fastest(run, cells)):
        console.print(Text(line, style="bold"))
