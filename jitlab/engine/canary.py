"""The drift canary: a fixed, short probe of the machine's speed, taken before every worker process.

A shared VM changes speed by tens of percent over minutes (the same pure-Python loop, run as
separate processes one after another, takes about 57 ms or about 34 ms, several runs at one speed,
then the other). Rounds spread such a spell over every cell; the canary says that it happened and by
how much. It is two kernels of fixed work run in the parent of each worker (locally the `jitlab`
process, on a cluster the node's task), each the fastest of a few repeats:

- `python_s`: a pure-Python integer loop, bound by the CPU's speed;
- `numpy_s`: a NumPy reduction over an array far larger than the caches, bound by memory bandwidth.

Each probe is recorded with its wall-clock time in the process record of the worker it preceded, so
a run knows its machine's speed over time per machine (`drift`), and a cell knows the speed its
processes ran at. The probe costs about 20-40 ms, against a worker process's second or more.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: iterations of the pure-Python loop (about 5 ms on a 2-core VM)
PYTHON_LOOPS = 100_000
#: float64 elements of the memory-bound kernel: 16 MiB, past the caches of common CPUs
NUMPY_ELEMENTS = 1 << 21
#: repeats of each kernel; the fastest is the probe (slowness only ever adds time)
REPEATS = 3
#: the two probes, in the order they are reported
PROBES = ("python_s", "numpy_s")

_array: np.ndarray | None = None


def _python_kernel(loops: int) -> int:
    total = 0
    for i in range(loops):
        total += i * i & 0xFF
    return total


def _numpy_kernel(array: np.ndarray) -> float:
    return float(np.add.reduce(array * 1.0001))


def probe() -> dict[str, float]:
    """One canary reading: {"t": wall-clock time, "python_s": ..., "numpy_s": ...}."""
    global _array
    if _array is None:
        _array = np.ones(NUMPY_ELEMENTS)
    clock = time.perf_counter
    reading = {"t": time.time()}
    python, numpy = [], []
    for _ in range(REPEATS):
        start = clock()
        _python_kernel(PYTHON_LOOPS)
        python.append(clock() - start)
        start = clock()
        _numpy_kernel(_array)
        numpy.append(clock() - start)
    reading["python_s"] = min(python)
    reading["numpy_s"] = min(numpy)
    return reading


@dataclass(frozen=True)
class Drift:
    """How the canary's probes varied over a run on one machine."""

    readings: int
    #: per probe: slow spell over fast spell, minus one (0.65: 65% slower at times); the 90th over the
    #: 10th percentile, so one hiccup does not make a drift
    by_probe: dict[str, float]
    #: per probe: the fastest reading (seconds), the yardstick of `series`
    fastest: dict[str, float]

    @property
    def drift(self) -> float:
        """The larger of the probes' drifts."""
        return max(self.by_probe.values(), default=0.0)

    @property
    def probe(self) -> str:
        """The probe that drifted most."""
        return max(self.by_probe, key=lambda k: self.by_probe[k]) if self.by_probe else PROBES[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "readings": self.readings,
            "drift": self.drift,
            "by_probe": dict(self.by_probe),
            "fastest_s": dict(self.fastest),
        }


#: the percentiles whose ratio is the drift
LOW_PERCENTILE, HIGH_PERCENTILE = 10, 90


def drift_of(readings: Sequence[dict[str, Any]]) -> Drift | None:
    """The drift of a machine from its canary readings (None without two readings)."""
    usable = [r for r in readings if all(isinstance(r.get(p), (int, float)) and r[p] > 0 for p in PROBES)]
    if len(usable) < 2:
        return None
    by_probe, fastest = {}, {}
    for name in PROBES:
        values = np.array([r[name] for r in usable], dtype=np.float64)
        low, high = np.percentile(values, [LOW_PERCENTILE, HIGH_PERCENTILE])
        by_probe[name] = float(high / low - 1.0)
        fastest[name] = float(values.min())
    return Drift(len(usable), by_probe, fastest)


def readings_of(process_details: Iterable[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every canary reading in the process records of some cells, oldest first."""
    found = [d["canary"] for details in process_details for d in details if isinstance(d.get("canary"), dict)]
    return sorted(found, key=lambda r: r.get("t", 0.0))
