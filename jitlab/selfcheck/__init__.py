"""`jitlab selfcheck`: can this machine's numbers be trusted? A minute of measurements through the
real engine with known answers (busy-waits of known cost, identical runs, a 5% slower build), the
timer and jitlab's own overhead, and the machine's state that spoils benchmarks, each with a verdict.

Layers usable alone: `harness` measures and judges, `machine_state` reads the machine, `report`
prints. `run_selfcheck` runs everything and returns a `SelfcheckReport`.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitlab.backends.base import cpu_count
from jitlab.engine.spec import CellSpec
from jitlab.selfcheck import harness, machine_state
from jitlab.selfcheck.harness import SelfcheckConfig
from jitlab.selfcheck.machine_state import FAIL, Check
from jitlab.store import CellRecord, Store

__all__ = ["SelfcheckConfig", "SelfcheckReport", "run_selfcheck"]


@dataclass(frozen=True)
class SelfcheckReport:
    checks: tuple[Check, ...]
    config: SelfcheckConfig
    duration_s: float
    machine: str

    @property
    def passed(self) -> bool:
        """No check failed (machine-state warnings do not fail the selfcheck)."""
        return not any(c.verdict == FAIL for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": "pass" if self.passed else "fail",
            "duration_s": self.duration_s,
            "machine": self.machine,
            "config": self.config.to_json(),
            "checks": [c.to_json() for c in self.checks],
        }


def run_selfcheck(
    config: SelfcheckConfig = SelfcheckConfig(),
    store_path: str | Path | None = None,
    on_start: Callable[[CellSpec], None] = lambda spec: None,
    on_done: Callable[[CellRecord], None] = lambda record: None,
) -> SelfcheckReport:
    """Measure, judge and read the machine. The cells go to a temporary store unless `store_path`
    is given (then they stay there as one run, for `jitlab show`)."""
    from jitlab.store.machine import machine_fingerprint, machine_info

    start = time.perf_counter()
    machine = machine_info()
    throttle_before = machine_state.throttle_counts()
    cpu_before = machine_state.cpu_times()
    busy = machine_state.busy_processes()  # before our own processes start
    load = machine_state.load_average(cpu_count())
    with tempfile.TemporaryDirectory(prefix="jitlab-selfcheck-") as scratch:
        store = Store(store_path or Path(scratch) / "selfcheck.sqlite")
        try:
            cells = harness.measure_cells(config, store, machine, on_start, on_done)
        finally:
            store.close()
    checks: list[Check] = [
        *harness.known_cost_checks(cells["known"], config),
        harness.identical_runs_check(cells["baseline"], config),
        harness.slower_build_check(cells["baseline"], cells["slower"], config),
        harness.timer_check([*cells["known"], *cells["baseline"]], config),
        harness.overhead_check(cells["known"], config),
        harness.drift_check([*cells["known"], *cells["baseline"], *cells["slower"]]),
        harness.load_check([*cells["known"], *cells["baseline"], *cells["slower"]]),
        machine_state.governor(),
        machine_state.turbo(),
        load,
        busy,
        machine_state.thermal_throttling(throttle_before),
        machine_state.steal_time(cpu_before),
        machine_state.aslr(),
        machine_state.isolated_cpus(),
    ]
    return SelfcheckReport(tuple(checks), config, time.perf_counter() - start, machine_fingerprint(machine))
