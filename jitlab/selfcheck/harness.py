"""The measured checks of `jitlab selfcheck`: cells of known cost run through the real engine (worker
processes, calibration, warm-up, several processes per cell, the store) and compared with the real
comparison, then judged against what they must show.

- known costs: busy-waits of 1 µs, 100 µs and 10 ms (calls ending on a grid, see
  `jitlab.selfcheck.workloads`) must be measured within ±2%;
- identical runs: a 2 ms busy-wait measured again and again and compared with the previous
  measurement is never called different;
- a 5% slower build: the same busy-wait made 5% longer is called slower every time;
- timer: the clock's resolution and the cost of reading it, against the shortest timed block;
- harness overhead: jitlab's own cost per call, measured in every worker, against the shortest time
  reported (the 1 µs busy-wait).

The cells of the comparisons are measured interleaved (A0, B0, A1, B1, ...) in every round of the
run's rounds (`jitlab.engine.rounds`, in the plan's order, not shuffled), so a drift of the machine during the selfcheck affects both
sides alike rather than posing as a change. The drift canary read before every worker process says
how much the machine's speed varied over the selfcheck (`drift_check`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitlab.compare.runs import compare_records
from jitlab.engine.canary import drift_of, readings_of
from jitlab.engine.load import Load, busiest
from jitlab.engine.plan import PlannedCell, execute_cells
from jitlab.engine.spec import CellSpec, TimingPolicy
from jitlab.selfcheck import workloads
from jitlab.selfcheck.machine_state import FAIL, PASS, UNKNOWN, WARN, Check
from jitlab.store import CellRecord, Store
from jitlab.store.run_options import RunOptions

WORKLOAD_FILE = str(Path(workloads.__file__).resolve())


@dataclass(frozen=True)
class SelfcheckConfig:
    """What the selfcheck measures. The defaults take about a minute on two cores."""

    known_costs_s: tuple[float, ...] = (1e-6, 1e-4, 1e-2)
    #: a known cost must be measured within this relative error
    tolerance: float = 0.02
    #: identical pairs compared, and 5%-slower pairs compared
    repeats: int = 10
    compare_cost_s: float = 2e-3
    slower_factor: float = 1.05
    #: worker processes per cell and sampling budget per cell, as `jitlab run --processes --budget`
    processes: int = 3
    budget_s: float = 0.4
    timeout_s: float = 120.0
    #: harness overhead and timer must stay below this share of the smallest reported time
    overhead_share: float = 0.01

    def to_json(self) -> dict[str, Any]:
        return {
            "known_costs_s": list(self.known_costs_s),
            "tolerance": self.tolerance,
            "repeats": self.repeats,
            "compare_cost_s": self.compare_cost_s,
            "slower_factor": self.slower_factor,
            "processes": self.processes,
            "budget_s": self.budget_s,
        }


def _spec(workload: str, cost_s: float, repeat: int, config: SelfcheckConfig) -> CellSpec:
    return CellSpec(
        workload=workload,
        backend="python",
        size=int(round(cost_s * 1e9)),
        params={"repeat": repeat},
        source_file=WORKLOAD_FILE,
        threads=1,
        # the budget is for sampling: the selfcheck wants its processes whatever they cost to start
        policy=TimingPolicy(budget_s=config.budget_s, processes=config.processes, startup_in_budget=False),
    )


def planned_cells(config: SelfcheckConfig) -> dict[str, list[CellSpec]]:
    """The cells, by role: known costs, then the comparison cells interleaved A0, B0, A1, B1, ..."""
    known = [_spec(workloads.grid.name, cost, 0, config) for cost in config.known_costs_s]
    slower_cost = config.compare_cost_s * config.slower_factor
    baseline = [
        _spec(workloads.spin.name, config.compare_cost_s, i, config) for i in range(config.repeats + 1)
    ]
    slower = [_spec(workloads.spin.name, slower_cost, i, config) for i in range(config.repeats)]
    return {"known": known, "baseline": baseline, "slower": slower}


def measure_cells(
    config: SelfcheckConfig,
    store: Store,
    machine: dict[str, Any],
    on_start: Callable[[CellSpec], None] = lambda spec: None,
    on_done: Callable[[CellRecord], None] = lambda record: None,
) -> dict[str, list[CellRecord]]:
    """Run every cell through the engine into `store` (one run) and return the records by role."""
    cells = planned_cells(config)
    order: list[CellSpec] = list(cells["known"])
    for i, base in enumerate(cells["baseline"]):
        order.append(base)
        if i < len(cells["slower"]):
            order.append(cells["slower"][i])
    run_id = store.create_run(
        target="selfcheck",
        workloads=[workloads.grid.name, workloads.spin.name],
        backends=["python"],
        sizes=None,
        options=RunOptions(policy=order[0].policy.__dict__, threads=1, timeout_s=config.timeout_s).to_json(),
        machine=machine,
    )
    # every round in this order: each pair (A_i, B_i) is measured side by side in every round
    records = execute_cells(
        store, run_id, [PlannedCell(s) for s in order], config.timeout_s, on_start, on_done, shuffle=False
    )
    store.set_run_status(run_id, "finished")
    by_spec = {(r.workload, r.size, r.params["repeat"]): r for r in records}
    return {
        role: [by_spec[(s.workload, s.size, s.params["repeat"])] for s in specs]
        for role, specs in cells.items()
    }


def _cost_label(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:g} µs"
    if seconds < 1:
        return f"{seconds * 1e3:g} ms"
    return f"{seconds:g} s"


def _not_measured(name: str, record: CellRecord) -> Check:
    return Check(
        name,
        "harness",
        FAIL,
        f"the cell was not measured: {record.status} ({record.reason})",
        "run `jitlab selfcheck --debug` or `jitlab run` on a small workload to see the failure",
    )


def known_cost_checks(records: Sequence[CellRecord], config: SelfcheckConfig) -> list[Check]:
    overheads = [
        d["harness_overhead_s"]
        for r in records
        for d in r.process_details
        if d.get("harness_overhead_s") is not None
    ]
    overhead = statistics.median(overheads) if overheads else None
    checks = []
    for cost, record in zip(config.known_costs_s, records):
        name = f"known cost {_cost_label(cost)}"
        if not record.ok or not record.samples_s:
            checks.append(_not_measured(name, record))
            continue
        s = record.summary
        error = s.median / cost - 1.0
        details = {
            "expected_s": cost,
            "median_s": s.median,
            "ci95_s": [s.ci_low, s.ci_high],
            "error": error,
            "processes": s.processes,
            "noise_floor": s.noise_floor,
            "samples": s.count,
        }
        summary = (
            f"measured {_cost_label(s.median)} ({error:+.2%}, 95% CI {s.ci_low / cost - 1:+.2%} … "
            f"{s.ci_high / cost - 1:+.2%}, {s.processes} processes)"
        )
        if abs(error) <= config.tolerance:
            checks.append(Check(name, "harness", PASS, summary, details=details))
        else:
            advice = _known_cost_advice(error, cost, overhead, busiest_load(records))
            checks.append(
                Check(name, "harness", FAIL, summary + f", outside ±{config.tolerance:.0%}", advice, details)
            )
    return checks


def _known_cost_advice(error: float, cost: float, overhead_s: float | None, load: Load | None = None) -> str:
    """Why a known cost was measured wrong. On the grid workload a call that misses its grid point
    waits one more full period, so a loop slower than the period shows as +100% or more, while a
    few per cent means that share of calls missed their point because the process was paused. The
    loop is to blame only when jitlab's own cost per call (measured in the same workers) is near the
    period; otherwise the process was paused, by the load the workers recorded where there was one."""
    paused = (
        f"the process was paused: the busiest worker {load.phrase()}"
        if load is not None and load.busy
        else "the process was paused (interrupts, time stolen by a hypervisor, other work)"
    )
    if error > 0 and cost < 1e-5:
        if error >= 0.5 and (overhead_s is None or overhead_s > 0.5 * cost):
            return (
                "the loop around a call costs more than the call's period: this machine cannot time calls "
                "this short (see the harness overhead check)"
            )
        if error >= 0.5:
            return (
                f"most calls missed their grid point and waited a full period more: {paused}. jitlab's own "
                f"cost per call ({overhead_s * 1e9:.1f} ns) is far below the period, so the harness is not "
                "the cause; run the selfcheck again on a quiet machine"
            )
        return (
            f"about {error:.1%} of the calls missed their grid point and waited a full period more: {paused}; "
            "see the machine state, and run the selfcheck again"
        )
    if load is not None and load.busy:
        return f"the machine slowed the busy-wait down: the busiest worker {load.phrase()}"
    return "the machine slowed the busy-wait down (load, frequency changes): see the machine state"


def busiest_load(records: Sequence[CellRecord]) -> Load | None:
    """The busiest worker process's load among some cells."""
    return busiest(
        [load for r in records for d in r.process_details if (load := Load.from_json(d.get("load")))]
    )


def load_check(records: Sequence[CellRecord]) -> Check:
    """How busy the machine was while the selfcheck's workers sampled, and what can still be trusted:
    a warning that names the load, never a failure (the machine, not jitlab, is busy)."""
    loads = [load for r in records for d in r.process_details if (load := Load.from_json(d.get("load")))]
    name = "load while measuring"
    if not loads:
        return Check(name, "machine", UNKNOWN, "the workers recorded no load (/proc is not readable here)")
    busy = [load for load in loads if load.busy]
    worst = busiest(loads)
    assert worst is not None
    details = {
        "processes": len(loads),
        "busy_processes": len(busy),
        "busiest": worst.to_json(),
        "median_wait_share": statistics.median(load.wait_share or 0.0 for load in loads),
    }
    if not busy:
        return Check(
            name,
            "machine",
            PASS,
            f"quiet: the busiest of {len(loads)} workers {worst.phrase()}",
            details=details,
        )
    return Check(
        name,
        "machine",
        WARN,
        f"busy: {len(busy)} of {len(loads)} workers waited for a CPU or lost time to the hypervisor (the "
        f"busiest {worst.phrase()})",
        TRUST_UNDER_LOAD,
        details,
    )


#: what a busy machine leaves trustworthy, as the selfcheck says it
TRUST_UNDER_LOAD = (
    "wall-time figures and comparisons are unreliable now (comparisons say `undecided` rather than guess); "
    "the CPU time of single-threaded code is less affected, and instruction counts (--measure "
    "instructions) are not affected at all"
)


def _comparison_json(a: CellRecord, b: CellRecord) -> dict[str, Any]:
    s, _ = compare_records(a, b)
    return {
        "ratio": s.ratio,
        "ratio_ci95": [s.ci_low, s.ci_high],
        "p_value": s.p_value,
        "verdict": s.verdict,
        "reason": s.reason,
    }


def identical_runs_check(baseline: Sequence[CellRecord], config: SelfcheckConfig) -> Check:
    name = "identical runs"
    bad = [r for r in baseline if not r.ok or not r.samples_s]
    if bad:
        return _not_measured(name, bad[0])
    comparisons = [_comparison_json(a, b) for a, b in zip(baseline, baseline[1:])]
    called = sum(c["verdict"] in ("faster", "slower") for c in comparisons)
    undecided = sum(c["verdict"] == "undecided" for c in comparisons)
    ratios = [c["ratio"] for c in comparisons]
    summary = (
        f"{called} of {len(comparisons)} comparisons of identical runs called different "
        f"(ratios {min(ratios):.4f} … {max(ratios):.4f})"
        + (f"; {undecided} undecided (the machine was busy or drifted)" if undecided else "")
    )
    details = {"compared": len(comparisons), "called_different": called, "comparisons": comparisons}
    if called == 0:
        return Check(name, "harness", PASS, summary, details=details)
    return Check(
        name,
        "harness",
        FAIL,
        summary,
        "the machine changed speed between runs by more than the noise floor shows: see the machine state, "
        "and raise --processes for a noise floor that sees more of it",
        details,
    )


def slower_build_check(
    baseline: Sequence[CellRecord], slower: Sequence[CellRecord], config: SelfcheckConfig
) -> Check:
    pct = f"{config.slower_factor - 1:.0%}"
    name = f"{pct} slower build"
    bad = [r for r in (*baseline, *slower) if not r.ok or not r.samples_s]
    if bad:
        return _not_measured(name, bad[0])
    comparisons = [_comparison_json(a, b) for a, b in zip(baseline, slower)]
    called = sum(c["verdict"] == "slower" for c in comparisons)
    undecided = sum(c["verdict"] == "undecided" for c in comparisons)
    ratios = [c["ratio"] for c in comparisons]
    summary = (
        f"{called} of {len(comparisons)} comparisons called a {pct} slower build slower "
        f"(ratios {min(ratios):.4f} … {max(ratios):.4f})"
        + (f"; {undecided} undecided (the machine was busy or drifted)" if undecided else "")
    )
    details = {"compared": len(comparisons), "called_slower": called, "comparisons": comparisons}
    if called == len(comparisons):
        return Check(name, "harness", PASS, summary, details=details)
    if called + undecided == len(comparisons):
        return Check(
            name,
            "harness",
            WARN,
            summary,
            f"not checked where undecided: the load or the machine's drift hid a {pct} change there, and "
            "jitlab said so instead of guessing; run the selfcheck again on a quiet machine",
            details,
        )
    return Check(
        name,
        "harness",
        FAIL,
        summary,
        f"the noise between processes or runs on this machine hides a {pct} change: see the machine state, "
        "or raise --processes and --budget",
        details,
    )


def timer_check(records: Sequence[CellRecord], config: SelfcheckConfig) -> Check:
    """Resolution of perf_counter (as declared, and the smallest step seen) and the cost of a read,
    against the shortest block the engine timed in this selfcheck."""
    info = time.get_clock_info("perf_counter")
    steps, reads = [], []
    clock = time.perf_counter
    for _ in range(20):
        start = clock()
        for _ in range(1000):
            clock()
        reads.append((clock() - start) / 1000)
        a = clock()
        b = clock()
        while b == a:
            b = clock()
        steps.append(b - a)
    step = min(steps)
    read = statistics.median(reads)
    blocks = [
        min(r.samples_s) * (d.get("loops") or 1)
        for r in records
        if r.ok and r.samples_s
        for d in r.process_details[:1]
    ]
    shortest = min(blocks) if blocks else None
    details = {
        "implementation": info.implementation,
        "declared_resolution_s": info.resolution,
        "smallest_step_s": step,
        "read_cost_s": read,
        "shortest_block_s": shortest,
    }
    summary = (
        f"{info.implementation}: resolution {info.resolution:.0e} s declared, smallest step seen "
        f"{step * 1e9:.0f} ns, a read costs {read * 1e9:.0f} ns"
    )
    if shortest is None:
        return Check("timer", "harness", FAIL, summary + "; no block was timed", details=details)
    share = max(step, read, info.resolution) / shortest
    summary += f": {share:.4%} of the shortest timed block ({_cost_label(shortest)})"
    if share < config.overhead_share:
        return Check("timer", "harness", PASS, summary, details=details)
    return Check(
        "timer",
        "harness",
        FAIL,
        summary,
        "raise the minimum block duration (TimingPolicy.min_block_s)",
        details,
    )


def overhead_check(known: Sequence[CellRecord], config: SelfcheckConfig) -> Check:
    """jitlab's own cost per call, measured in every worker of the known-cost cells, against the
    smallest median reported in the selfcheck."""
    overheads = [
        d["harness_overhead_s"]
        for r in known
        for d in r.process_details
        if d.get("harness_overhead_s") is not None
    ]
    medians = [r.summary.median for r in known if r.ok and r.samples_s]
    if not overheads or not medians:
        return Check("harness overhead", "harness", FAIL, "not measured: the known-cost cells failed")
    overhead = statistics.median(overheads)
    smallest = min(medians)
    share = overhead / smallest
    details = {
        "overhead_per_call_s": overhead,
        "per_worker_s": overheads,
        "smallest_reported_s": smallest,
        "share": share,
    }
    summary = (
        f"{overhead * 1e9:.1f} ns per call (median of {len(overheads)} workers), {share:.2%} of the smallest "
        f"reported time ({_cost_label(smallest)})"
    )
    if share < config.overhead_share:
        return Check("harness overhead", "harness", PASS, summary, details=details)
    return Check(
        "harness overhead",
        "harness",
        FAIL,
        summary + f", above {config.overhead_share:.0%}",
        f"times below {overhead / config.overhead_share * 1e6:.1f} µs carry more than "
        f"{config.overhead_share:.0%} of jitlab's own overhead on this machine: time more work per call",
        details,
    )


#: the canary's drift over the selfcheck above which it warns: a change this size between two runs
#: minutes apart may be the machine's
DRIFT_WARNING = 0.05


def drift_check(records: Sequence[CellRecord]) -> Check:
    """The machine's speed over the selfcheck, from the drift canary read before every worker
    process (`jitlab.engine.canary`), and what it means for comparisons. A warning, never a failure:
    the machine, not jitlab, drifts."""
    readings = readings_of(r.process_details for r in records)
    drift = drift_of(readings)
    name = "speed drift (canary)"
    if drift is None:
        return Check(name, "machine", UNKNOWN, "no canary readings (no worker process ran)")
    span = readings[-1]["t"] - readings[0]["t"]
    summary = (
        f"the machine's speed varied by {drift.drift:.1%} over {span:.0f} s (pure Python probe "
        f"{drift.by_probe['python_s']:.1%}, memory-bound NumPy probe {drift.by_probe['numpy_s']:.1%}; "
        f"{drift.readings} readings, 90th over 10th percentile)"
    )
    details = {**drift.to_json(), "span_s": span, "series": readings}
    if drift.drift <= DRIFT_WARNING:
        return Check(name, "machine", PASS, summary, details=details)
    return Check(
        name,
        "machine",
        WARN,
        summary,
        f"two runs minutes apart may differ by up to {drift.drift:.0%} from the machine alone: within one run, "
        "rounds spread it over every cell and the closing lines' per-round ratios cancel it; between runs, "
        "compare calls only changes beyond the cells' noise floors, and a change near this size needs the "
        "runs repeated alternately (A, B, A, B) to be believed",
        details,
    )
