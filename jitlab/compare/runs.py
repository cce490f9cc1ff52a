"""Comparing two stored runs: every matching cell, a geometric mean per backend, and whether the
runs were measured on the same machine (allowed, but flagged: the ratios then mix code and hardware).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitlab.compare.conditions import UNDECIDED, Conditions, judge
from jitlab.compare.matching import match_cells
from jitlab.compare.paired import busy_note, compare_paired_cells, compared_apart, measured_together
from jitlab.engine.canary import PROBES, readings_of
from jitlab.engine.load import Load
from jitlab.errors import UserError
from jitlab.stats.comparison import (
    DEFAULT_ALPHA,
    GeometricMean,
    SampleComparison,
    compare_with_replicates,
    geometric_mean,
)
from jitlab.store import CellRecord, RunRecord, Store
from jitlab.store.identity import machine_label, machine_labels
from jitlab.store.machine import machine_fingerprint


@dataclass(frozen=True)
class CellComparison:
    """One matching cell of runs A and B. `stats` is None when either side has no samples."""

    workload: str
    backend: str
    size: int
    params: dict[str, Any]
    median_a: float | None
    median_b: float | None
    status_a: str
    status_b: str
    stats: SampleComparison | None
    #: the machine that measured both (or "A → B" when compared across machines)
    machine: str = ""

    #: why the cells could not be compared, when they measured different things
    not_comparable: str | None = None
    #: instructions per call of each side (cells counted under Valgrind)
    instructions_a: float | None = None
    instructions_b: float | None = None

    @property
    def verdict(self) -> str:
        if self.stats is None:
            return f"not comparable ({self.status_a} → {self.status_b})"
        return self.stats.verdict

    def to_json(self) -> dict[str, Any]:
        s = self.stats
        return {
            "workload": self.workload,
            "backend": self.backend,
            "size": self.size,
            "params": self.params,
            "machine": self.machine,
            "status_a": self.status_a,
            "status_b": self.status_b,
            "median_a_s": self.median_a,
            "median_b_s": self.median_b,
            "instructions_a": self.instructions_a,
            "instructions_b": self.instructions_b,
            "ratio": s.ratio if s else None,
            "ratio_ci95": [s.ci_low, s.ci_high] if s else None,
            "p_value": s.p_value if s else None,
            "samples": [s.count_a, s.count_b] if s else None,
            "processes": [s.processes_a, s.processes_b] if s else None,
            "noise_floor": [s.noise_floor_a, s.noise_floor_b] if s else None,
            "margin": {"value": s.margin, "kind": s.margin_kind} if s else None,
            "verdict": self.verdict,
            "basis": s.basis if s else None,
            "reason": s.reason
            if s
            else self.not_comparable or f"not comparable: {self.status_a} in A, {self.status_b} in B",
        }


@dataclass(frozen=True)
class RunComparison:
    run_a: RunRecord
    run_b: RunRecord
    cells: tuple[CellComparison, ...]
    geomeans: dict[str, GeometricMean]
    only_a: tuple[CellRecord, ...] = ()
    only_b: tuple[CellRecord, ...] = ()
    alpha: float = DEFAULT_ALPHA
    #: an explicit threshold (fraction): changes smaller than it are hidden from `shown` (0.05 hides
    #: |change| < 5%) and it replaces the noise floor as the margin a change must clear. None: the
    #: cells' noise floors decide, nothing is hidden
    threshold: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: labels of the machines that measured the cells of each run
    machines_a: tuple[str, ...] = ()
    machines_b: tuple[str, ...] = ()
    across_machines: bool = False
    #: per machine, how much slower the drift canary's probes ran during B than A (see `canary_shifts`)
    canary_shift: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def same_machine(self) -> bool:
        if self.machines_a or self.machines_b:
            return set(self.machines_a) == set(self.machines_b)
        return machine_fingerprint(self.run_a.machine) == machine_fingerprint(self.run_b.machine)

    @property
    def several_machines(self) -> bool:
        """Cells of more than one machine are compared (name the machine beside each cell)."""
        return len(set(self.machines_a) | set(self.machines_b)) > 1

    @property
    def shown(self) -> list[CellComparison]:
        """Cells whose change reaches the threshold, and cells that could not be compared."""
        threshold = self.threshold or 0.0
        return [c for c in self.cells if c.stats is None or abs(c.stats.ratio - 1.0) >= threshold - 1e-12]

    def counts(self) -> dict[str, int]:
        out = {"faster": 0, "slower": 0, "same": 0, UNDECIDED: 0, "not comparable": 0, "too few samples": 0}
        for c in self.cells:
            key = "not comparable" if c.stats is None else c.stats.verdict
            out[key] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a.run_id,
            "run_b": self.run_b.run_id,
            "same_machine": self.same_machine,
            "machine_a": machine_fingerprint(self.run_a.machine),
            "machine_b": machine_fingerprint(self.run_b.machine),
            "machines_a": list(self.machines_a),
            "machines_b": list(self.machines_b),
            "across_machines": self.across_machines,
            "alpha": self.alpha,
            "threshold_pct": None if self.threshold is None else self.threshold * 100,
            "counts": self.counts(),
            "geomean_by_backend": {
                backend: {"ratio": g.ratio, "ratio_ci95": [g.ci_low, g.ci_high], "cells": g.cells}
                for backend, g in self.geomeans.items()
            },
            "cells": [c.to_json() for c in self.shown],
            "hidden_below_threshold": len(self.cells) - len(self.shown),
            "canary_shift": self.canary_shift,
            "notes": list(self.notes),
            "only_in_a": [_key_json(c) for c in self.only_a],
            "only_in_b": [_key_json(c) for c in self.only_b],
        }


def _key_json(cell: CellRecord) -> dict[str, Any]:
    return {"workload": cell.workload, "backend": cell.backend, "size": cell.size, "params": cell.params}


def compare_cells(
    run_a: RunRecord,
    run_b: RunRecord,
    cells_a: list[CellRecord],
    cells_b: list[CellRecord],
    alpha: float = DEFAULT_ALPHA,
    threshold_pct: float | None = None,
    across_machines: bool = False,
    measure: str = "auto",
) -> RunComparison:
    """Compare two runs' cells (already read from a store). Without `threshold_pct` a change must
    clear both cells' noise floors; with it, the threshold. Cells measured on different machines
    are compared only with `across_machines`; without it, runs with nothing else in common are a
    `UserError` saying so. `measure`: "instructions", "wall" or "auto" (instruction counts where
    both cells have them, else wall time)."""
    matching = match_cells(cells_a, cells_b, across_machines)
    machines_a = tuple(machine_labels(c.machine for c in cells_a))
    machines_b = tuple(machine_labels(c.machine for c in cells_b))
    if not matching.pairs and matching.other_machine_pairs:
        raise UserError(
            f"runs {run_a.run_id} and {run_b.run_id} were measured on different machines "
            f"({', '.join(machines_a)} and {', '.join(machines_b)}): a change between them mixes code and "
            "hardware; pass --across-machines to compare them anyway"
        )
    if not matching.pairs:
        raise UserError(
            f"runs {run_a.run_id} and {run_b.run_id} have no cells in common "
            "(same workload, backend, size and parameters): compare runs of the same workloads"
        )
    together = measured_together(run_a, run_b)
    rows: list[CellComparison] = []
    replicates: dict[str, list[np.ndarray]] = {}
    ratios: dict[str, list[float]] = {}
    for a, b in matching.pairs:
        stats = None
        basis, why_not = comparable_on(a, b, measure)
        if basis is not None:
            fast = is_fast(run_a) or is_fast(run_b)
            threshold = None if threshold_pct is None else threshold_pct / 100.0
            paired = (
                compare_paired_cells(a, b, alpha, threshold) if together and basis == "wall time" else None
            )
            stats, logs = paired or compare_records(a, b, alpha, threshold_pct, fast=fast, basis=basis)
            if together and paired is None and basis == "wall time":
                stats = compared_apart(stats, busy_note(a, b))
            replicates.setdefault(a.backend, []).append(logs)
            ratios.setdefault(a.backend, []).append(stats.ratio)
        rows.append(
            CellComparison(
                workload=a.workload,
                backend=a.backend,
                size=a.size,
                params=dict(a.params),
                median_a=a.median_s,
                median_b=b.median_s,
                status_a=a.status,
                status_b=b.status,
                stats=stats,
                machine=_machine_of(a, b),
                not_comparable=why_not,
                instructions_a=a.instruction_summary.median if a.instruction_summary else None,
                instructions_b=b.instruction_summary.median if b.instruction_summary else None,
            )
        )
    geomeans = {backend: geometric_mean(replicates[backend], ratios[backend]) for backend in ratios}
    shifts = canary_shifts(matching.pairs)
    return RunComparison(
        run_a=run_a,
        run_b=run_b,
        cells=tuple(rows),
        geomeans=geomeans,
        only_a=matching.only_a,
        only_b=matching.only_b,
        alpha=alpha,
        threshold=None if threshold_pct is None else threshold_pct / 100.0,
        machines_a=machines_a,
        machines_b=machines_b,
        across_machines=across_machines,
        notes=(
            (
                f"runs {run_a.run_id} and {run_b.run_id} were measured side by side (`jitlab run --against`): "
                "wall-time changes are paired per round, which takes the machine's drift out",
            )
            if together
            else tuple(
                shift_note(machine if len(shifts) > 1 else "", shift) for machine, shift in shifts.items()
            )
        ),
        canary_shift=shifts,
    )


def canary_shifts(pairs: list[tuple[CellRecord, CellRecord]]) -> dict[str, dict[str, float]]:
    """How much slower each drift-canary probe ran during run B than during run A, per machine:
    {machine: {"python_s": +0.12, "numpy_s": -0.01}} (the ratio of the median readings, minus one),
    for machines whose cells carry readings in both runs (runs of older jitlabs have none)."""
    out: dict[str, dict[str, float]] = {}
    by_machine: dict[str, tuple[list[CellRecord], list[CellRecord]]] = {}
    for a, b in pairs:
        side_a, side_b = by_machine.setdefault(_machine_of(a, b), ([], []))
        side_a.append(a)
        side_b.append(b)
    for machine, (cells_a, cells_b) in by_machine.items():
        readings_a = readings_of(c.process_details for c in cells_a)
        readings_b = readings_of(c.process_details for c in cells_b)
        if not readings_a or not readings_b:
            continue
        out[machine] = {
            probe: float(
                np.median([r[probe] for r in readings_b]) / np.median([r[probe] for r in readings_a]) - 1
            )
            for probe in PROBES
        }
    return out


def shift_note(machine: str, shift: dict[str, float]) -> str:
    """'the machine ran the drift canary's pure-Python probe 12.0% slower during run B ...'."""
    where = f" {machine}" if machine else ""
    return (
        f"drift canary on{where or ' this machine'}: its pure-Python probe took {shift['python_s']:+.1%} and "
        f"its memory-bound NumPy probe {shift['numpy_s']:+.1%} in run B against run A: a change of about "
        "that size in a cell may be the machine's speed, not the code"
    )


#: what `--measure` accepts for comparisons
MEASURES = ("auto", "wall", "instructions")


def comparable_on(a: CellRecord, b: CellRecord, measure: str = "auto") -> tuple[str | None, str | None]:
    """(what two cells are compared on: "instructions" or "wall time", None when they cannot be;
    why not). Failed cells, and cells that measured different things, are not comparable."""
    if not (a.ok and b.ok):
        return None, None
    counts = _positive(a.instructions) and _positive(b.instructions)
    times = _positive(a.samples_s) and _positive(b.samples_s)
    if measure in ("auto", "instructions") and counts:
        return "instructions", None
    if measure in ("auto", "wall") and times:
        return "wall time", None
    wanted = {"auto": "the same measure", "wall": "wall time", "instructions": "instruction counts"}[measure]
    return None, f"not comparable: run A measured {a.measure}, run B {b.measure}, and {wanted} is asked for"


def compare_records(
    a: CellRecord,
    b: CellRecord,
    alpha: float = DEFAULT_ALPHA,
    threshold_pct: float | None = None,
    fast: bool = False,
    basis: str = "wall time",
) -> tuple[SampleComparison, np.ndarray]:
    """One stored cell against another, process by process; `fast`: one of them comes from a
    `--fast` run (a wider noise floor). On wall time, the verdict also weighs the load and the
    machine's speed each side was measured at (`jitlab.compare.conditions`: CPU time decides
    where load inflated the wall time and the backend runs one thread; otherwise `undecided`)."""
    threshold = None if threshold_pct is None else threshold_pct / 100.0

    def on(what: str) -> tuple[SampleComparison, np.ndarray]:
        (values_a, process_a), (values_b, process_b) = _series(a, what), _series(b, what)
        return compare_with_replicates(
            values_a, values_b, alpha=alpha, process_a=process_a, process_b=process_b,
            threshold=threshold, fast=fast and what != "instructions", basis=what,
        )  # fmt: skip

    if basis == "instructions":
        return on("instructions")
    wall, logs = on("wall time")
    cond_a, cond_b = Conditions.of(a.process_details), Conditions.of(b.process_details)
    cpu = quiet = None
    if cond_a.busy or cond_b.busy:
        quiet_a, quiet_b = quiet_series(a), quiet_series(b)
        if quiet_a is not None and quiet_b is not None:
            quiet, _ = compare_with_replicates(
                quiet_a[0], quiet_b[0], alpha=alpha, process_a=quiet_a[1], process_b=quiet_b[1],
                threshold=threshold, fast=fast,
            )  # fmt: skip
        if wall.significant and a.cpu_summary and b.cpu_summary:
            cpu, _ = on("cpu time")
    return judge(wall, cond_a, cond_b, cpu, quiet), logs


#: a side is compared on its quiet processes alone when at least this many ran quiet, and at least
#: half of its processes (fewer say little about the cell)
MIN_QUIET_PROCESSES = 3


def quiet_series(cell: CellRecord) -> tuple[list[float], list[int]] | None:
    """A cell's wall-time samples from its processes that did not run busy (and were not measured
    again), with their processes; None when too few ran quiet (`MIN_QUIET_PROCESSES`, half)."""
    if not cell.sample_process or len(cell.sample_process) != len(cell.samples_s):
        return None
    kept = [k for k, d in enumerate(cell.process_details) if d.get("replaced_by") is None]
    quiet = {
        k for k in kept if not ((load := Load.from_json(cell.process_details[k].get("load"))) and load.busy)
    }
    if len(quiet) < max(MIN_QUIET_PROCESSES, (len(kept) + 1) // 2):
        return None
    pairs = [(v, k) for v, k in zip(cell.samples_s, cell.sample_process) if k in quiet]
    return [v for v, _ in pairs], [k for _, k in pairs]


def _series(cell: CellRecord, basis: str) -> tuple[tuple[float, ...], tuple[int, ...] | None]:
    """A cell's values on a basis ("wall time", "cpu time", "instructions") and their processes."""
    if basis == "instructions":
        return cell.instructions, cell.instruction_process or None
    return (cell.cpu_samples_s if basis == "cpu time" else cell.samples_s), cell.sample_process or None


def is_fast(run: RunRecord) -> bool:
    """The run was a quick look (`jitlab run --fast`)."""
    return run.run_options.fast


def _machine_of(a: CellRecord, b: CellRecord) -> str:
    label_a, label_b = machine_label(a.machine), machine_label(b.machine)
    return label_a if label_a == label_b else f"{label_a} → {label_b}"


def compare_runs(
    store: Store,
    run_a: int | str,
    run_b: int | str,
    alpha: float = DEFAULT_ALPHA,
    threshold_pct: float | None = None,
    across_machines: bool = False,
    measure: str = "auto",
) -> RunComparison:
    """Compare run B against run A (the baseline). Unknown ids and runs without common cells are
    `UserError`s."""
    if threshold_pct is not None and threshold_pct < 0:
        raise UserError(f"--threshold {threshold_pct:g} is negative: give a percentage such as 5")
    if not 0 < alpha < 1:
        raise UserError(f"--alpha {alpha:g} must lie between 0 and 1, e.g. 0.01")
    record_a, record_b = store.run(run_a), store.run(run_b)
    cells_a, cells_b = store.cells(record_a.run_id), store.cells(record_b.run_id)
    return compare_cells(record_a, record_b, cells_a, cells_b, alpha, threshold_pct, across_machines, measure)


def _positive(samples: tuple[float, ...]) -> bool:
    """Usable for a ratio: at least one sample, all of them positive."""
    return bool(samples) and min(samples) > 0
