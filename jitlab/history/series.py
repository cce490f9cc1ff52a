"""Reading a workload's history from the store: per machine and (backend, size, parameters), the
median of every run, oldest first, with the step changes found in it.

Only measurements of one machine are comparable, so each machine has series of its own (a run
across several machines adds a point to each machine's series). `machine` keeps one machine's
series; the runs it leaves out are counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from jitlab.errors import UserError
from jitlab.formatting import params_label, size_label
from jitlab.history.changepoint import DEFAULT_MIN_SIZE, detect_steps
from jitlab.store import CellRecord, RunRecord, Store
from jitlab.store.database import params_key
from jitlab.store.identity import machine_label, machine_labels


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
    #: the machine that measured every point; shown in the label when the history has several
    machine: str = ""
    several_machines: bool = False

    @property
    def label(self) -> str:
        params = f" {params_label(self.params)}" if self.params else ""
        where = f" on {self.machine}" if self.several_machines else ""
        return f"{self.backend} n={size_label(self.size)}{params}{where}"

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "machine": self.machine,
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
    machine: str = "",
    several_machines: bool = False,
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
    return HistorySeries(
        workload, backend, size, dict(params), tuple(points), tuple(steps), machine, several_machines
    )


def load_history(
    store: Store,
    workload: str,
    backend: str | None = None,
    size: int | None = None,
    machine: str | None = None,
    penalty_scale: float = 1.0,
) -> History:
    """Every matching series of `workload`, per machine; only `machine`'s (a machine label) if given."""
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
    if machine is not None:
        labels = machine_labels(c.machine for c in cells)
        if machine not in labels:
            raise UserError(
                f"no cells of workload {workload!r} measured on {machine!r}: machines are {', '.join(labels)}"
            )
    others = sorted({c.run_id for c in cells if machine is not None and machine_label(c.machine) != machine})
    kept = [c for c in cells if machine is None or machine_label(c.machine) == machine]
    groups: dict[tuple[str, str, int, str], list[CellRecord]] = {}
    for cell in kept:
        groups.setdefault(
            (machine_label(cell.machine), cell.backend, cell.size, params_key(cell.params)), []
        ).append(cell)
    machines = list(dict.fromkeys(key[0] for key in sorted(groups)))
    several = len(machines) > 1
    series = tuple(
        build_series(
            workload,
            b,
            n,
            group[0].params,
            sorted(group, key=lambda c: c.run_id),
            runs,
            penalty_scale,
            machine=m,
            several_machines=several,
        )
        for (m, b, n, _), group in sorted(groups.items())
    )
    return History(workload, ", ".join(machines), series, tuple(others))
