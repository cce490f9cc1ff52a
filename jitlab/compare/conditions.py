"""Was a called change the code's, or the machine's? The conditions each side was measured in.

A comparison of wall times calls a change when it is significant and outside the noise floors
(`jitlab.stats.comparison`). Two things the noise floors of the cells cannot see still move a wall time:

- **load**: other work competing for the CPUs while one side measured. Each worker process records
  how long it waited for a CPU and how much time the hypervisor stole (`jitlab.engine.load`). When
  either side ran busy, its wall time holds waiting as well as work: a process that waited a share
  w of its time ran up to 1 / (1 - w) times longer than its work (10% more is allowed for the work
  itself slowing down beside the load). A change larger than that still stands. Otherwise, where
  most of each side's processes ran quiet, those decide on wall time; failing that, for a
  backend that runs one thread, CPU time decides (a preempted process keeps its CPU time; `basis`
  "cpu time"); failing that, the verdict is `undecided`, never faster or slower. A pure-Python loop of 8.0 ms read 24 ms of wall time and 8.1 ms of CPU time beside
  two CPU-bound processes on a 2-core VM;
- **the machine's own speed**: a shared VM runs the same code tens of per cent slower at times. The
  drift canary read before each worker process (`jitlab.engine.canary`) measures it; when dividing
  the change by how much slower the canary ran during B than during A brings it back within the
  margin, the verdict is `undecided` too (a probe whose shift is within the spread of its own
  readings on either side says nothing, and is left out).

(A comparison too noisy to tell anything is `undecided` already in `jitlab.stats.comparison`.) Both
turn a call into `undecided` with a reason that names the cause and what to do (measure on a
quiet machine, or count instructions, which load does not change). An undecided cell passes a
regression gate (exit 0) and is listed as such.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from jitlab.engine.canary import PROBES
from jitlab.engine.load import Load, busiest
from jitlab.stats.comparison import SampleComparison

UNDECIDED = "undecided"
#: what an undecided verdict suggests
ADVICE = "measure again on a quiet machine, or count instructions (--measure instructions), which load does not change"


@dataclass(frozen=True)
class Conditions:
    """What one side of a comparison knows about the machine while it measured."""

    #: the busiest of its processes' loads (None: not recorded, e.g. a store of an older jitlab)
    load: Load | None
    #: the median drift-canary reading per probe over its processes (None: not recorded)
    canary: dict[str, float] | None
    #: per probe, how far its readings on this side spread (slowest over fastest, minus one): a
    #: shift between the sides smaller than that is the canary's own noise
    canary_spread: dict[str, float] | None = None

    @classmethod
    def of(cls, process_details: tuple[dict[str, Any], ...]) -> Conditions:
        """From a cell's process records, leaving out processes that were measured again."""
        kept = [d for d in process_details if d.get("replaced_by") is None]
        loads = [load for d in kept if (load := Load.from_json(d.get("load"))) is not None]
        readings = [d["canary"] for d in kept if isinstance(d.get("canary"), dict)]
        canary = spread = None
        if readings and all(
            isinstance(r.get(p), (int, float)) and r[p] > 0 for r in readings for p in PROBES
        ):
            canary = {p: float(np.median([r[p] for r in readings])) for p in PROBES}
            spread = {p: max(r[p] for r in readings) / min(r[p] for r in readings) - 1.0 for p in PROBES}
        return cls(busiest(loads), canary, spread)

    @property
    def busy(self) -> bool:
        return self.load is not None and self.load.busy


def canary_shift(a: Conditions, b: Conditions) -> dict[str, float] | None:
    """How much slower each canary probe ran during B than during A (+0.3: 30% slower), for the
    probes whose shift is larger than their readings' own spread within either side."""
    if a.canary is None or b.canary is None:
        return None
    shifts = {}
    for p in PROBES:
        moved = b.canary[p] / a.canary[p] - 1.0
        noise = max((a.canary_spread or {}).get(p, 0.0), (b.canary_spread or {}).get(p, 0.0))
        if abs(moved) > noise:
            shifts[p] = moved
    return shifts


def _called(low: float, high: float, verdict: str, margin: float) -> bool:
    return low > 1.0 + margin if verdict == "slower" else high < 1.0 - margin


#: a busy process's own work runs slower too (caches and branch predictors shared with the load):
#: the bound on what the load explains is widened by this factor
LOAD_SLACK = 1.10


def inflation(conditions: Conditions) -> float:
    """How many times longer than its work a side's wall time can be, from the share of its time
    its busiest process waited for a CPU or lost to the hypervisor (and `LOAD_SLACK`)."""
    load = conditions.load
    if load is None or not load.busy:
        return 1.0
    lost = (load.wait_share or 0.0) + (load.steal_share or 0.0)
    return LOAD_SLACK / max(1.0 - lost, 0.05)


def beyond_load(wall: SampleComparison, a: Conditions, b: Conditions) -> bool:
    """The change is larger than the load of the side it would blame can explain: slower needs B's
    interval to clear the margin after B's inflation is divided out, faster A's."""
    if wall.verdict == "slower":
        return _called(wall.ci_low / inflation(b), wall.ci_high, "slower", wall.margin)
    return _called(wall.ci_low, wall.ci_high * inflation(a), "faster", wall.margin)


def judge(
    wall: SampleComparison,
    a: Conditions,
    b: Conditions,
    cpu: SampleComparison | None = None,
    quiet: SampleComparison | None = None,
) -> SampleComparison:
    """The verdict of a wall-time comparison, given the conditions of both sides (see the module
    docstring); `cpu` is the same comparison on CPU time, where it applies to both sides; `quiet`
    on the wall times of the processes that ran quiet, where most of each side's did (a cell
    measured in many processes seldom has all of them quiet: one busy process should not make the
    others' figures useless)."""
    result = wall
    load = "; ".join(
        f"run {side} was measured on a busy machine (its busiest process {c.load.phrase()})"
        for side, c in (("A", a), ("B", b))
        if c.busy and c.load is not None
    )
    beyond = wall.significant and load and beyond_load(wall, a, b)
    if load and not beyond and quiet is not None and quiet.decided:
        result = replace(
            quiet,
            basis="quiet processes",
            reason=f"{quiet.reason}, on the processes that ran quiet ({quiet.processes_a} in A, "
            f"{quiet.processes_b} in B): {load}",
        )
    elif wall.significant and load:
        if beyond:
            result = replace(wall, reason=f"{wall.reason}, more than the load explains ({load})")
        elif cpu is not None and cpu.verdict == wall.verdict:
            result = replace(
                cpu,
                reason=f"{cpu.reason}, on CPU time: {load}, so its wall time "
                f"({wall.change:+.1%}) held waiting as well as work",
            )
        else:
            on_cpu = f"; on CPU time: {cpu.verdict} {cpu.change:+.1%}" if cpu is not None else ""
            return replace(
                wall,
                verdict=UNDECIDED,
                reason=f"undecided: {load}: the wall-time change {wall.change:+.1%} cannot be told from the "
                f"load{on_cpu}; {ADVICE}",
            )
    shift = canary_shift(a, b)
    if result.significant and shift:
        for probe, moved in shift.items():
            factor = 1.0 + moved
            if not _called(result.ci_low / factor, result.ci_high / factor, result.verdict, result.margin):
                name = "pure-Python" if probe == "python_s" else "memory-bound NumPy"
                return replace(
                    result,
                    verdict=UNDECIDED,
                    reason=f"undecided: the machine itself ran {abs(moved):.1%} "
                    f"{'slower' if moved > 0 else 'faster'} during run B than during run A (the drift canary's {name} probe), and the change {result.change:+.1%} "
                    f"[{result.ci_low - 1:+.1%}, {result.ci_high - 1:+.1%}] taken relative to it lies within "
                    f"±{result.margin:.1%}; {ADVICE}",
                )
    return result
