"""The machine's state that spoils benchmarks, read the way pyperf's `system show` reads it: CPU
frequency governor, turbo, load and other busy processes, thermal throttling, ASLR, isolated CPUs,
and (in a virtual machine) time stolen by the host. Each item has a verdict and, when it is not
`pass`, advice. None of them fails the selfcheck: they explain why the measured checks might.

Everything is read from /proc and /sys (Linux); where a file is missing (another OS, a container,
a virtual machine without cpufreq) the verdict is `unknown`, never a guess.
"""

from __future__ import annotations

import glob
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PASS, WARN, FAIL, UNKNOWN = "pass", "warn", "fail", "unknown"
#: a process using more than this share of one CPU while the selfcheck sampled counts as busy
BUSY_PROCESS_CPU = 0.10
#: load average per CPU above which the machine counts as busy
BUSY_LOAD_PER_CPU = 0.5


@dataclass
class Check:
    """One verdict of the selfcheck."""

    name: str
    kind: str  # harness | machine
    verdict: str  # pass | warn | fail | unknown
    summary: str
    advice: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "verdict": self.verdict,
            "summary": self.summary,
            "advice": self.advice,
            "details": self.details,
        }


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def governor() -> Check:
    values = sorted(
        {v for p in glob.glob("/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor") if (v := _read(p))}
    )
    if not values:
        return Check(
            "CPU frequency governor",
            "machine",
            UNKNOWN,
            "no cpufreq information (a virtual machine or container: the host sets the clock)",
        )
    if values == ["performance"]:
        return Check(
            "CPU frequency governor",
            "machine",
            PASS,
            "performance on every CPU",
            details={"governors": values},
        )
    return Check(
        "CPU frequency governor",
        "machine",
        WARN,
        f"governor {', '.join(values)}: the clock follows the load, so a benchmark's speed depends on what ran before",
        "set the performance governor while measuring: sudo cpupower frequency-set -g performance",
        {"governors": values},
    )


def turbo() -> Check:
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    advice = (
        "disable turbo while measuring: echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo "
        "(or 0 into /sys/devices/system/cpu/cpufreq/boost)"
    )
    if no_turbo is not None:
        if no_turbo == "1":
            return Check("turbo boost", "machine", PASS, "disabled (intel_pstate no_turbo=1)")
        return Check(
            "turbo boost",
            "machine",
            WARN,
            "enabled: the clock rises and falls with temperature and the load on other cores",
            advice,
        )
    if boost is not None:
        if boost == "0":
            return Check("turbo boost", "machine", PASS, "disabled (cpufreq boost=0)")
        return Check("turbo boost", "machine", WARN, "enabled (cpufreq boost=1)", advice)
    return Check(
        "turbo boost", "machine", UNKNOWN, "not readable here (no intel_pstate or cpufreq boost file)"
    )


def load_average(cpus: int) -> Check:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return Check("load average", "machine", UNKNOWN, "not available on this system")
    details = {"1min": one, "5min": five, "15min": fifteen, "cpus": cpus}
    text = f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on {cpus} CPUs"
    if one / cpus > BUSY_LOAD_PER_CPU:
        return Check(
            "load average",
            "machine",
            WARN,
            f"{text}: other work competes for the CPUs (the selfcheck's own processes add about 1)",
            "measure when the machine is idle; on a shared machine, expect wider intervals and noise floors",
            details,
        )
    return Check("load average", "machine", PASS, text, details=details)


def busy_processes(seconds: float = 0.5) -> Check:
    """Other processes that used CPU while we watched (not this one, not its children)."""
    try:
        import psutil
    except ImportError:
        return Check("other busy processes", "machine", UNKNOWN, "psutil is not installed")
    me = psutil.Process()
    mine = {me.pid, *(c.pid for c in me.children(recursive=True))}
    procs = [p for p in psutil.process_iter(["pid", "name"]) if p.pid not in mine]
    for p in procs:
        try:
            p.cpu_percent(None)
        except (psutil.Error, OSError):
            pass
    time.sleep(seconds)
    busy = []
    for p in procs:
        try:
            share = p.cpu_percent(None) / 100.0
        except (psutil.Error, OSError):
            continue
        if share > BUSY_PROCESS_CPU:
            busy.append({"pid": p.pid, "name": p.info.get("name") or "?", "cpu": round(share, 2)})
    busy.sort(key=lambda b: -b["cpu"])
    if not busy:
        return Check("other busy processes", "machine", PASS, "none above 10% of a CPU")
    names = ", ".join(f"{b['name']} ({b['cpu']:.0%})" for b in busy[:5])
    return Check(
        "other busy processes",
        "machine",
        WARN,
        f"{len(busy)} using CPU: {names}" + (" ..." if len(busy) > 5 else ""),
        "stop them, or pin the benchmark to CPUs they do not use (taskset)",
        {"processes": busy},
    )


def throttle_counts() -> dict[str, int]:
    counts = {}
    for path in glob.glob("/sys/devices/system/cpu/cpu*/thermal_throttle/*_throttle_count"):
        value = _read(path)
        if value is not None and value.isdigit():
            counts[path] = int(value)
    return counts


def thermal_throttling(before: dict[str, int]) -> Check:
    after = throttle_counts()
    if not before and not after:
        return Check("thermal throttling", "machine", UNKNOWN, "no thermal_throttle counters readable here")
    events = sum(max(0, after.get(k, 0) - v) for k, v in before.items())
    if events:
        return Check(
            "thermal throttling",
            "machine",
            WARN,
            f"{events} throttling events during the selfcheck: the CPU slowed down to cool",
            "improve cooling, or disable turbo so the CPU stays below its thermal limit",
            {"events": events},
        )
    return Check("thermal throttling", "machine", PASS, "no throttling events during the selfcheck")


def aslr() -> Check:
    value = _read("/proc/sys/kernel/randomize_va_space")
    if value is None:
        return Check("ASLR", "machine", UNKNOWN, "not readable here")
    if value == "0":
        return Check(
            "ASLR",
            "machine",
            WARN,
            "off: every worker process gets the same memory layout, so a cell's processes cannot show "
            "how much the layout moves the figures",
            "leave address-space randomisation on (echo 2 | sudo tee /proc/sys/kernel/randomize_va_space); "
            "jitlab's processes per cell sample its effect",
        )
    return Check(
        "ASLR",
        "machine",
        PASS,
        f"on (randomize_va_space={value}): each worker process has its own layout, which the noise floor includes",
    )


def isolated_cpus() -> Check:
    value = _read("/sys/devices/system/cpu/isolated")
    if value is None:
        return Check("isolated CPUs", "machine", UNKNOWN, "not readable here")
    if value:
        return Check(
            "isolated CPUs", "machine", PASS, f"CPUs {value} are isolated", details={"isolated": value}
        )
    return Check(
        "isolated CPUs",
        "machine",
        WARN,
        "none: the scheduler may run other work on the CPUs a benchmark uses",
        "for the quietest figures boot with isolcpus=<cpus> (and nohz_full=<cpus>) and run jitlab under "
        "taskset -c <cpus>",
    )


def cpu_times() -> list[int] | None:
    line = _read("/proc/stat")
    if not line:
        return None
    fields = line.splitlines()[0].split()
    return [int(v) for v in fields[1:]] if fields[0] == "cpu" else None


def steal_time(before: list[int] | None) -> Check:
    after = cpu_times()
    if before is None or after is None or len(after) < 8:
        return Check("time stolen by a hypervisor", "machine", UNKNOWN, "not readable here")
    delta = [b - a for a, b in zip(before, after)]
    total = sum(delta[:8])
    share = delta[7] / total if total > 0 else 0.0
    if share > 0.01:
        return Check(
            "time stolen by a hypervisor",
            "machine",
            WARN,
            f"{share:.1%} of CPU time went to other virtual machines during the selfcheck",
            "a virtual machine shares its physical CPUs: use dedicated cores or bare metal for fine comparisons",
            {"steal_share": share},
        )
    return Check(
        "time stolen by a hypervisor",
        "machine",
        PASS,
        f"{share:.1%} during the selfcheck",
        details={"steal_share": share},
    )
