"""The terminal view of a run comparison (rich): one row per matching cell, then a geometric mean
per backend. Only significant changes are coloured and called faster/slower."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from jitlab import formatting as fmt
from jitlab.compare.runs import RunComparison
from jitlab.formatting import params_label
from jitlab.stats.comparison import ONE_PROCESS_FLOOR

VERDICT_STYLE = {
    "faster": "bold green",
    "slower": "bold red",
    "same": "dim",
    "undecided": "yellow",
    "too few samples": "yellow",
}
#: printed instead of an interval wider than the ratio itself
UNRESOLVED = "unresolved: too noisy"
UNRESOLVED_NOTE = (
    "the 95% interval of the ratio is wider than the ratio itself: the machine was too noisy for a "
    "figure (see the undecided and noise-floor notes; `jitlab selfcheck` says what this machine can resolve)"
)


def _pct(ratio: float) -> str:
    return f"{ratio - 1:+.1%}"


def comparison_table(comparison: RunComparison) -> Table:
    a, b = comparison.run_a.run_id, comparison.run_b.run_id
    table = Table(title=f"run {b} against run {a} (ratio = median {b} / median {a})", title_justify="left")
    table.add_column("cell", overflow="fold")
    table.add_column(f"run {a}", justify="right")
    table.add_column(f"run {b}", justify="right")
    table.add_column("change", justify="right", no_wrap=True)
    table.add_column("95% CI", justify="right")
    table.add_column("p", justify="right", no_wrap=True)
    table.add_column("noise floor", justify="right", no_wrap=True)
    table.add_column("verdict")
    for cell in comparison.shown:
        s = cell.stats
        params = f" {params_label(cell.params)}" if cell.params else ""
        style = VERDICT_STYLE.get(cell.verdict, "red")
        verdict = cell.verdict if s else f"{cell.status_a} → {cell.status_b}"
        if s is not None and s.basis != "wall time" and s.verdict != "undecided":
            verdict += f" ({s.basis})"
        change = Text(_pct(s.ratio), style=style) if s else Text("-")
        if s is None:
            interval = "-"
        elif s.unresolved:
            interval = UNRESOLVED
        else:
            interval = f"{_pct(s.ci_low)}, {_pct(s.ci_high)}"
        where = f" · on {cell.machine}" if comparison.several_machines else ""
        table.add_row(
            Text(f"{cell.workload} · {cell.backend} · n={fmt.size_label(cell.size)}{params}{where}"),
            *_medians(cell),
            change,
            interval,
            f"{s.p_value:.1g}" if s else "-",
            _margin_text(s) if s else "-",
            Text(verdict, style=style),
        )
    return table


def _medians(cell) -> tuple[str, str]:
    """Both sides' figures: instructions per call when counted, else the median times."""
    if cell.stats is not None and cell.stats.basis == "instructions":
        return cell_figure(cell.instructions_a), cell_figure(cell.instructions_b)
    return fmt.seconds(cell.median_a), fmt.seconds(cell.median_b)


def cell_figure(instructions: float | None) -> str:
    return "-" if instructions is None else fmt.si(instructions, "instr")


def _margin_text(s) -> str:
    """The margin a change had to clear: ±0.6% (both cells' noise floor), ±5.0%* (a side measured
    in one process), ±5.0% thr (an explicit --threshold); a floor beyond 100% is not a number."""
    if s.margin >= 1.0:
        return "unresolved"
    suffix = {"one-process floor": "*", "threshold": " thr", "paired-rounds floor": " paired"}.get(
        s.margin_kind, ""
    )
    return f"±{s.margin:.1%}{suffix}"


def print_comparison(console: Console, comparison: RunComparison) -> None:
    if comparison.across_machines and not comparison.same_machine:
        console.print(
            Text(
                "! compared across machines (--across-machines): "
                f"run {comparison.run_a.run_id} on {', '.join(comparison.machines_a)}, "
                f"run {comparison.run_b.run_id} on {', '.join(comparison.machines_b)}; "
                "the ratios mix code and hardware",
                style="bold yellow",
            )
        )
    console.print(comparison_table(comparison))
    hidden = len(comparison.cells) - len(comparison.shown)
    if hidden:
        console.print(
            Text(f"{hidden} cells changed by less than {comparison.threshold or 0:.0%}: hidden", style="dim")
        )
    summary = Table(title="geometric mean of the ratios per backend", title_justify="left")
    for column in ("backend", "cells", "change", "95% CI"):
        summary.add_column(column)
    for backend, g in comparison.geomeans.items():
        style = "bold red" if g.ci_low > 1 else "bold green" if g.ci_high < 1 else ""
        summary.add_row(
            Text(backend),
            str(g.cells),
            Text(_pct(g.ratio), style=style),
            f"{_pct(g.ci_low)} … {_pct(g.ci_high)}",
        )
    console.print(summary)
    counts = comparison.counts()
    if any(c.stats and c.stats.margin_kind == "one-process floor" for c in comparison.shown):
        console.print(
            Text(
                f"* a side measured in one process: its floor is the spread of its own samples, at least "
                f"±{ONE_PROCESS_FLOOR:.0%} (one process cannot show how far another would stray; a larger "
                "--budget buys slow cells more processes)",
                style="dim",
            )
        )
    if any(c.stats and c.stats.unresolved for c in comparison.shown):
        console.print(Text(f"{UNRESOLVED}: {UNRESOLVED_NOTE}", style="dim"))
    console.print(
        f"{counts['slower']} slower, {counts['faster']} faster, {counts['same']} without a called change"
        f" (significant at alpha={comparison.alpha:g} and the ratio's 95% CI outside the noise floor of "
        "both cells; --json says why for each cell)"
        + (f", {counts['undecided']} undecided" if counts["undecided"] else "")
        + (f", {counts['not comparable']} not comparable" if counts["not comparable"] else "")
        + (f", {counts['too few samples']} with too few samples" if counts["too few samples"] else "")
    )
    undecided = [c for c in comparison.cells if c.stats is not None and c.stats.verdict == "undecided"]
    if undecided:
        console.print(
            Text(f"undecided: {undecided[0].stats.reason.removeprefix('undecided: ')}", style="yellow")
        )
    for note in comparison.notes:
        console.print(Text(note, style="dim"))
    for label, cells in (("only in run", comparison.only_a), ("only in run", comparison.only_b)):
        if cells:
            run_id = cells[0].run_id
            names = ", ".join(f"{c.workload}·{c.backend}·n={fmt.size_label(c.size)}" for c in cells[:8])
            more = f" and {len(cells) - 8} more" if len(cells) > 8 else ""
            console.print(Text(f"{label} {run_id}: {names}{more}", style="dim"))
