"""Reading a workload's history from the store: per (backend, size, parameters), the median of every
run on one machine, oldest first, with the step changes found in it.

Only runs on one machine are comparable: by default the machine of the newest run holding the
workload; runs on other machines are left out and counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from jitlab.errors import UserError
from jitlab.history.changepoint import DEFAULT_MIN_SIZE, detect_steps
from jitlab.report.formatting import params_label, size_label
from jitlab.store import CellRecord, RunRecord, Store
from jitlab.store.machine import machine_fingerprint
from jitlab.store.sqlite_store import params_key


@dataclass(frozen=True)
class HistoryPoint:
    run_id: int
    created_at: str
    median_s: float
    ci_low_s: float
    ci_high_s: float
    samples: int
    commit: str | None


@dataclass(frozen=True)
class Step:
    """A step change that began at run `run_id` (the first run of the new level)."""

    index: int
    run_id: int
    before_s: float  # geometric mean of the medians of the segment before
    after_s: float  # ... and of the segment that begins here

    @property
    def change(self) -> float:
        return self.after_s / self.before_s - 1.0


@dataclass(frozen=True)
class HistorySeries:
    workload: str
    backend: str
    size: int
    params: dict[str, Any]
    points: tuple[HistoryPoint, ...]
    steps: tuple[Step, ...]

    @property
    def label(self) -> str:
        params = f" {params_label(self.params)}" if self.params else ""
        return f"{self.backend} n={size_label(self.size)}{params}"

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "backend": self.backend,
            "size": self.size,
            "params": self.params,
            "points": [p.__dict__ for p in self.points],
            "steps": [
                {"run_id": s.run_id, "before_s": s.before_s, "after_s": s.after_s, "change": s.change}
                for s in self.steps
            ],
        }


@dataclass(frozen=True)
class History:
    workload: str
    machine: str
    series: tuple[HistorySeries, ...]
    other_machine_runs: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "machine": self.machine,
            "series": [s.to_json() for s in self.series],
            "runs_on_other_machines": list(self.other_machine_runs),
        }


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def build_series(
    workload: str,
    backend: str,
    size: int,
    params: dict[str, Any],
    cells: list[CellRecord],
    runs: dict[int, RunRecord],
    penalty_scale: float = 1.0,
    min_size: int = DEFAULT_MIN_SIZE,
) -> HistorySeries:
    """One cell's series (cells in run order, successful ones only) and its steps."""
    points = []
    for cell in cells:
        s = cell.summary
        run = runs[cell.run_id]
        points.append(
            HistoryPoint(
                cell.run_id,
                run.created_at,
                s.median,
                s.ci_low,
                s.ci_high,
                s.count,
                run.machine.get("project_commit"),
            )
        )
    medians = [p.median_s for p in points]
    indices = detect_steps(
        medians, [p.ci_low_s for p in points], [p.ci_high_s for p in points], penalty_scale, min_size
    )
    bounds = [0, *indices, len(points)]
    steps = []
    for k, index in enumerate(indices):
        before = medians[bounds[k] : index]
        after = medians[index : bounds[k + 2]]
        steps.append(Step(index, points[index].run_id, _geomean(before), _geomean(after)))
    return HistorySeries(workload, backend, size, dict(params), tuple(points), tuple(steps))


def load_history(
    store: Store,
    workload: str,
    backend: str | None = None,
    size: int | None = None,
    machine: str | None = None,
    penalty_scale: float = 1.0,
) -> History:
    """Every matching series of `workload`, on `machine` (a fingerprint; default: the newest run's)."""
    filters: dict[str, Any] = {"workload": workload}
    if backend is not None:
        filters["backend"] = backend
    if size is not None:
        filters["size"] = size
    cells = [c for c in store.cells_where(**filters) if c.ok and c.samples_s and min(c.samples_s) > 0]
    if not cells:
        what = "".join(f" {k}={v}" for k, v in filters.items() if k != "workload")
        raise UserError(
            f"no successful stored cells of workload {workload!r}{what} in {store.path}: "
            "`jitlab runs` lists the runs, `jitlab show RUN_ID` their cells"
        )
    runs = {r.run_id: r for r in store.runs()}
    if machine is None:
        machine = machine_fingerprint(runs[max(c.run_id for c in cells)].machine)
    others = sorted({c.run_id for c in cells if machine_fingerprint(runs[c.run_id].machine) != machine})
    kept = [c for c in cells if c.run_id not in others]
    groups: dict[tuple[str, int, str], list[CellRecord]] = {}
    for cell in kept:
        groups.setdefault((cell.backend, cell.size, params_key(cell.params)), []).append(cell)
    series = tuple(
        build_series(
            workload, b, n, group[0].params, sorted(group, key=lambda c: c.run_id), runs, penalty_scale
        )
        for (b, n, _), group in sorted(groups.items())
    )
    return History(workload, machine, series, tuple(others))
