"""The regression gate for CI: which cells of a run are significantly slower than a baseline run by
more than a given percentage. `jitlab run --baseline RUN_ID --fail-above PCT` exits with 1 when any is.
"""

from __future__ import annotations

from rich.console import Console

from jitlab.compare.conditions import UNDECIDED
from jitlab.compare.runs import CellComparison, RunComparison, compare_runs
from jitlab.errors import UserError
from jitlab.formatting import params_label
from jitlab.stats.comparison import DEFAULT_ALPHA
from jitlab.store import Store
from jitlab.store.identity import machine_labels

#: --fail-above when only --baseline is given
DEFAULT_FAIL_ABOVE_PCT = 5.0


def validate_gate(
    store: Store, baseline_id: int | None, fail_above_pct: float | None, against: bool = False
) -> None:
    """Check the gate's options before anything is measured (`against`: the baseline is the other
    build this run measures beside it, `jitlab run --against`)."""
    if baseline_id is None and not against:
        if fail_above_pct is not None:
            raise UserError(
                "--fail-above needs --baseline RUN_ID or --against OLD: the run to compare against"
            )
        return
    if fail_above_pct is not None and fail_above_pct < 0:
        raise UserError(f"--fail-above {fail_above_pct:g} is negative: give a percentage such as 5")
    if baseline_id is not None:
        store.run(baseline_id)  # an unknown id is a UserError


def check_gate_machines(store: Store, baseline_id: str | int | None, machines: list[str]) -> None:
    """Refuse, before anything is measured, a baseline measured on none of the machines this run will
    measure on: its comparison would mix code and hardware (`jitlab compare --across-machines`)."""
    if baseline_id is None:
        return
    baseline = store.run(baseline_id)
    theirs = machine_labels(c.machine for c in store.cells(baseline.run_id))
    if theirs and not set(theirs) & set(machines):
        raise UserError(
            f"--baseline {baseline_id} was measured on {', '.join(theirs)}, this run measures on "
            f"{', '.join(machines)}: compare runs of the same machine (or the two runs with "
            "`jitlab compare --across-machines`)"
        )


def check_regressions(
    store: Store, baseline_id: int, run_id: int, fail_above_pct: float, alpha: float = DEFAULT_ALPHA
) -> list[CellComparison]:
    """Cells of `run_id` called slower than in `baseline_id` (significant, and the ratio's interval
    outside both cells' noise floors) with a median ratio above 1 + fail_above_pct / 100. A baseline
    without common cells is a `UserError`."""
    return regressions_in(compare_runs(store, baseline_id, run_id, alpha=alpha), fail_above_pct)


def undecided_in(comparison: RunComparison) -> list[CellComparison]:
    """Cells the comparison could not decide (the machine was busy or drifted: `compare.conditions`)."""
    return [c for c in comparison.cells if c.stats is not None and c.stats.verdict == UNDECIDED]


def undecided_note(comparison: RunComparison) -> str:
    """'; 3 cells undecided: ...' for the gate's closing line ("" when every cell was decided): an
    undecided cell passes the gate, and says why it could not be checked."""
    undecided = undecided_in(comparison)
    if not undecided:
        return ""
    reason = undecided[0].stats.reason.removeprefix("undecided: ") if undecided[0].stats else ""
    return (
        f"; {len(undecided)} cell(s) undecided, which passes the gate but checks nothing "
        f"({undecided[0].workload} · {undecided[0].backend} · n={undecided[0].size}: {reason})"
    )


def regressions_in(comparison: RunComparison, fail_above_pct: float) -> list[CellComparison]:
    """Cells of a comparison called slower with a median ratio above 1 + fail_above_pct / 100
    (`jitlab compare --fail-above` applies it to the comparison it shows)."""
    limit = 1.0 + fail_above_pct / 100.0
    return [
        c
        for c in comparison.cells
        if c.stats is not None and c.stats.verdict == "slower" and c.stats.ratio > limit
    ]


def describe(cell: CellComparison, with_machine: bool = False) -> str:
    """One line naming a regressed cell (and its machine, when the runs span several)."""
    s = cell.stats
    assert s is not None
    params = f" {params_label(cell.params)}" if cell.params else ""
    params += f" on {cell.machine}" if with_machine and cell.machine else ""
    return (
        f"{cell.workload} · {cell.backend} · n={cell.size}{params}: {s.ratio - 1:+.1%} "
        f"(95% CI {s.ci_low - 1:+.1%} … {s.ci_high - 1:+.1%}, p={s.p_value:.2g}, "
        f"{s.margin_kind} ±{s.margin:.1%})"
    )


def gate_exit_code(
    store: Store, baseline_id: int | None, run_id: int, fail_above_pct: float | None, console: Console
) -> int:
    """For `jitlab run`: 0 without a baseline or without regressions; else print them and return 1."""
    if baseline_id is None:
        return 0
    pct = DEFAULT_FAIL_ABOVE_PCT if fail_above_pct is None else fail_above_pct
    comparison = compare_runs(store, baseline_id, run_id)
    regressions = regressions_in(comparison, pct)
    if not regressions:
        console.print(
            f"no cell is significantly slower than in run {baseline_id} by more than {pct:g}%"
            + undecided_note(comparison),
            highlight=False,
        )
        return 0
    console.print(
        f"[bold red]{len(regressions)} cells significantly slower than in run {baseline_id} "
        f"by more than {pct:g}%:[/]"
    )
    for cell in regressions:
        console.print(f"  {describe(cell)}", highlight=False, markup=False)
    return 1
