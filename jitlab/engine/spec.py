"""The identity of a measurement (`CellSpec`) and the knobs of the timing method (`TimingPolicy`).

Both are frozen and JSON-serialisable: the parent sends them to a worker process and stores them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: environment variable telling a worker (and the workload code it runs) which of its cell's
#: processes it is: 0 for the first, which makes the cold first call
PROCESS_INDEX_ENV = "JITLAB_PROCESS_INDEX"
#: environment variable with the wall-clock time (time.time()) at which the parent started the worker
LAUNCHED_AT_ENV = "JITLAB_LAUNCHED_AT"
#: what a cell measures: seconds per call (the default), or instructions per call under Valgrind
WALL = "wall"
INSTRUCTIONS = "instructions"
MEASURES = (WALL, INSTRUCTIONS)


@dataclass(frozen=True)
class TimingPolicy:
    """How long and how precisely to measure one cell. Time budgets, not iteration counts, so the
    same defaults fit a microsecond kernel and a ten-second one."""

    #: seconds of steady-state sampling at most (warm-up included)
    budget_s: float = 5.0
    #: stop sampling once the 95% CI of the median is within ±this fraction of it
    target_ci: float = 0.02
    #: a timed block lasts at least this long (the inner loop is calibrated to it)
    min_block_s: float = 0.01
    #: samples collected before the stopping rule is consulted
    min_samples: int = 10
    max_samples: int = 1000
    #: share of the budget warm-up may use before it gives up waiting for timings to settle
    warmup_share: float = 0.25
    #: warm-up has settled when two consecutive windows of this many blocks agree to within settle_tolerance
    settle_window: int = 3
    settle_tolerance: float = 0.05
    #: worker processes per cell, each with its own warm-up and an equal share of the budget (calls
    #: too slow to fit several processes into the budget get fewer; see `planned_processes`)
    processes: int = 1
    #: more than `processes`: a cell whose 95% interval (counting the spread between its processes)
    #: is still wider than `target_ci` after them gets another process, one per round, up to this
    #: many (`jitlab.engine.rounds`); 0: as many as `processes` plans
    max_processes: int = 0
    #: the budget also pays for starting the extra processes (imports, building the workload), so a
    #: cell costs about what it did with one process; False: the budget is for sampling only
    startup_in_budget: bool = True
    #: on a CUDA device, zero a buffer larger than the L2 cache before every timed call (cold caches)
    flush_l2: bool = False
    #: "wall": time the calls; "instructions": count them under Valgrind (`jitlab.engine.counting`)
    measure: str = WALL


@dataclass(frozen=True)
class CellSpec:
    """What one worker measures: a workload at one size on one backend."""

    workload: str
    backend: str
    size: int
    params: dict[str, Any] = field(default_factory=dict)
    source_file: str | None = None
    threads: int = 1
    policy: TimingPolicy = field(default_factory=TimingPolicy)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellSpec:
        data = dict(data)
        data["policy"] = TimingPolicy(**data.get("policy", {}))
        return cls(**data)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.workload, self.backend, self.size)
