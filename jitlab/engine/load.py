"""How busy the machine was while a process measured: its wait for a CPU, time stolen by a
hypervisor, and the load average, read from /proc over the process's sampling.

A timing taken while other work competed for the CPUs is longer than the code's own cost: on the
2-core development VM, a pure-Python loop of 8.0 ms took 24 ms of wall time beside two CPU-bound
processes, while its CPU time stayed 8.1 ms. The kernel says how much of that was waiting:

- `wait_share`: the time this process's threads were ready to run but waited on a run queue
  (`/proc/self/task/*/schedstat`, second field), over the wall time, per thread that ran. About 0%
  on a quiet machine, 40-65% beside two CPU-bound processes on two cores;
- `steal_share`: time the hypervisor gave this virtual machine's CPUs to other machines
  (`/proc/stat`, the `steal` column), over all CPU time;
- `cpu_share`: this process's CPU time over the wall time (one thread that is never preempted
  reads 1.0);
- `loadavg`: the one-minute load average at the end, beside the number of CPUs.

A process whose `wait_share` or `steal_share` passes `BUSY_SHARE` was measured in a slow spell
(`Load.busy`). Where /proc is missing (another OS) every field is None and nothing is called busy.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: a process that waited this share of its time for a CPU (or lost it to the hypervisor) ran busy
BUSY_SHARE = 0.05
_TASKS = Path("/proc/self/task")
_STAT = Path("/proc/stat")


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _thread_stats() -> dict[str, tuple[int, int]]:
    """{thread id: (ns on a CPU, ns waiting on a run queue)} of this process's threads."""
    out = {}
    try:
        for task in _TASKS.iterdir():
            try:
                fields = (task / "schedstat").read_text().split()
                out[task.name] = (int(fields[0]), int(fields[1]))
            except (OSError, ValueError, IndexError):
                continue
    except OSError:
        return {}
    return out


def _cpu_ticks() -> tuple[int, int] | None:
    """(steal ticks, all ticks) of the machine's CPUs since boot."""
    try:
        fields = _STAT.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 9:
        return None
    values = [int(v) for v in fields[1:9]]
    return values[7], sum(values)


@dataclass(frozen=True)
class LoadSnapshot:
    """The counters at one moment; two of them make a `Load`."""

    wall_s: float
    cpu_s: float
    threads: dict[str, tuple[int, int]]
    ticks: tuple[int, int] | None


def snapshot() -> LoadSnapshot:
    return LoadSnapshot(time.monotonic(), time.process_time(), _thread_stats(), _cpu_ticks())


@dataclass(frozen=True)
class Load:
    """How busy the machine was between two snapshots (see the module docstring)."""

    seconds: float
    wait_share: float | None
    steal_share: float | None
    cpu_share: float | None
    loadavg: float | None
    cpus: int

    @property
    def busy(self) -> bool:
        """Measured in a slow spell: the process waited for a CPU, or the hypervisor took it."""
        return (self.wait_share or 0.0) > BUSY_SHARE or (self.steal_share or 0.0) > BUSY_SHARE

    def phrase(self) -> str:
        """'waited 35% of its time for a CPU, load 4.1 on 2 CPUs' (what was measured)."""
        parts = []
        if self.wait_share is not None:
            parts.append(f"waited {self.wait_share:.0%} of its time for a CPU")
        if self.steal_share is not None and self.steal_share > BUSY_SHARE / 5:
            parts.append(f"{self.steal_share:.0%} of the CPUs' time stolen by the hypervisor")
        if self.loadavg is not None:
            parts.append(f"load {self.loadavg:.1f} on {self.cpus} CPUs")
        return ", ".join(parts) or "no load information"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Load | None:
        if not isinstance(data, dict):
            return None
        try:
            values = {
                k: None if data.get(k) is None else float(data[k])
                for k in ("wait_share", "steal_share", "cpu_share", "loadavg")
            }
            return cls(seconds=float(data["seconds"]), **values, cpus=int(data.get("cpus") or 1))
        except (TypeError, ValueError, KeyError):
            return None


def load_between(before: LoadSnapshot, after: LoadSnapshot) -> Load:
    wall = max(after.wall_s - before.wall_s, 1e-9)
    waits, running = 0, 0
    for tid, (cpu_ns, wait_ns) in after.threads.items():
        if tid in before.threads:
            ran = cpu_ns - before.threads[tid][0]
            waited = wait_ns - before.threads[tid][1]
            if ran > 0 or waited > 0:
                waits += waited
                running += 1
    wait_share = waits / 1e9 / wall / running if running else None
    steal_share = None
    if before.ticks and after.ticks:
        total = after.ticks[1] - before.ticks[1]
        steal_share = (after.ticks[0] - before.ticks[0]) / total if total > 0 else 0.0
    try:
        loadavg: float | None = os.getloadavg()[0]
    except OSError:
        loadavg = None
    return Load(
        seconds=wall,
        wait_share=wait_share,
        steal_share=steal_share,
        cpu_share=(after.cpu_s - before.cpu_s) / wall,
        loadavg=loadavg,
        cpus=_cpus(),
    )


def busiest(loads: list[Load]) -> Load | None:
    """The load of the busiest of some processes (by their wait for a CPU, then steal)."""
    if not loads:
        return None
    return max(loads, key=lambda load: (load.wait_share or 0.0) + (load.steal_share or 0.0))


def machine_idle_share(seconds: float = 0.25) -> float | None:
    """Share of the machine's CPU time that went idle over `seconds` (1.0: nothing ran); None
    where /proc/stat is missing. The caller sleeps through it, so its own share is nothing."""
    try:
        first = _STAT.read_text().split("\n", 1)[0].split()
        time.sleep(seconds)
        second = _STAT.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    a = [int(v) for v in first[1:9]]
    b = [int(v) for v in second[1:9]]
    total = sum(b) - sum(a)
    idle = (b[3] + b[4]) - (a[3] + a[4])  # idle and iowait
    return idle / total if total > 0 else None
