"""Runs measured side by side (`jitlab run NEW --against OLD`): which runs are paired, each cell's
figure per round, and the paired comparison of two cells (`jitlab.stats.paired`).

Two runs are paired when both carry the same `pair` id in their options: the run that measured
them interleaved wrote it. Their cells' process k ran in the same round k, so the per-round ratio is
free of the machine's drift; `jitlab compare` and the gate use it instead of the cells' noise floors.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from jitlab.engine.load import Load
from jitlab.stats.comparison import (
    DEFAULT_ALPHA,
    SMALL_CHANGE,
    SampleComparison,
    compare_paired,
    too_wide_for_same,
)
from jitlab.stats.hierarchical import group_samples, noise_floor
from jitlab.stats.paired import common_rounds, paired_change
from jitlab.stats.quiet_rounds import STOPPED_EARLY, RoundProcess
from jitlab.stats.quiet_rounds import round_medians as quiet_round_medians
from jitlab.store import CellRecord, RunRecord

#: why two cells measured side by side were compared as separate runs
UNPAIRED = (
    "measured side by side, but fewer than 3 rounds ran quiet for both builds (a process that waited "
    "for a CPU leaves its round out), so compared as separate runs"
)


def compared_apart(stats: SampleComparison, note: str | None = None) -> SampleComparison:
    """A cell of a side-by-side run compared as separate runs (too few quiet rounds): the reason says
    so, and "same" needs its interval within ±2%, as a paired cell's does (unless a threshold was
    given). The busy rounds that left the pairing out also moved each side's time: with two CPU-bound
    processes beside `run --against` and 80 busy rounds, a 5% slower build read "same" at 0.998 and
    1.039 (intervals of about ±5%), which a gate would have passed. `note`: how many rounds ran busy
    and whether the pair stopped early for it (`busy_note`)."""
    reason = f"{stats.reason} ({UNPAIRED}{'; ' + note if note else ''})"
    if too_wide_for_same(stats.verdict, stats.ci_low, stats.ci_high, stats.margin_kind):
        return replace(
            stats,
            verdict="undecided",
            reason=f"undecided: most rounds ran busy, and the interval reaches beyond ±{SMALL_CHANGE:.0%}: "
            f"{reason}; measure again on a quieter machine",
        )
    return replace(stats, reason=reason)


def busy_note(a: CellRecord, b: CellRecord) -> str | None:
    """'30 of 40 rounds ran busy for either build and were left out' for two cells measured side by
    side, and the cells' own word when their pair stopped early for it ('the machine was busy in 40
    of 40 rounds ..., so the pair stopped before its budget: ...'); None when no round was left
    out."""
    both = common_rounds(round_medians(a), round_medians(b))
    quiet = common_rounds(round_medians(a, quiet_only=True), round_medians(b, quiet_only=True))
    if len(both) <= len(quiet):
        return None
    note = f"{len(both) - len(quiet)} of {len(both)} rounds ran busy for either build and were left out"
    stopped = next((w for c in (a, b) for w in c.warnings if STOPPED_EARLY in w), None)
    return note if stopped is None else f"{note}; {stopped.split(': ', 1)[-1]}"  # without "slow spell: "


def measured_together(run_a: RunRecord, run_b: RunRecord) -> bool:
    """Both runs were measured in the same rounds by one `jitlab run --against`."""
    return run_a.pair_id is not None and run_a.pair_id == run_b.pair_id and run_a.run_id != run_b.run_id


def round_medians(cell: CellRecord, quiet_only: bool = False) -> dict[int, float]:
    """{round: median of the process measured in it} for a cell measured in rounds ({} otherwise).
    A process measured again after the rounds (a slow spell's replacement, round "again") belongs
    to no round: it pairs with nothing. `quiet_only`: only the rounds a pair counts, by the rule the
    run itself counted them by while it measured (`jitlab.stats.quiet_rounds.round_medians`)."""
    if not cell.samples_s:
        return {}
    samples = np.asarray(cell.samples_s, dtype=np.float64)
    index = np.asarray(cell.sample_process or [0] * len(samples))
    processes = (
        RoundProcess(
            details.get("round"),
            samples[index == details.get("process", k)],
            details.get("status") == "ok",
            _busy(details),
            replaced=details.get("replaced_by") is not None,
        )
        for k, details in enumerate(cell.process_details)
    )
    return quiet_round_medians(processes, quiet_only)


def _busy(details: dict[str, Any]) -> bool:
    load = Load.from_json(details.get("load"))
    return bool(load and load.busy)


def compare_paired_cells(
    a: CellRecord, b: CellRecord, alpha: float = DEFAULT_ALPHA, threshold: float | None = None
) -> tuple[SampleComparison, np.ndarray] | None:
    """Cell B against cell A from the rounds both measured quietly; None when fewer than three such
    rounds exist (the caller compares them as separate runs)."""
    change = paired_change(round_medians(a, quiet_only=True), round_medians(b, quiet_only=True))
    if change is None:
        return None
    floors = tuple(
        noise_floor(group_samples(c.samples_s, c.sample_process or None)) if c.sample_process else None
        for c in (a, b)
    )
    stats, logs = compare_paired(change, len(a.samples_s), len(b.samples_s), alpha, threshold, floors)  # type: ignore[arg-type]
    note = busy_note(a, b)
    return (replace(stats, reason=f"{stats.reason}; {note}") if note else stats), logs
