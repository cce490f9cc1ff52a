"""What one call of a workload's implementation costs the machine, in the units of its peaks.

A workload declares `workload.work = fn(size, params, backend) -> Work` (pi does). With the
machine's peaks (`jitlab machine`: random words per second, memory bandwidth, seconds per framework
call), `jitlab.report.limits` turns it into a lower bound on the time of one call, names the part
that bounds it (random-number generation, memory or overhead) and sets it beside the measured time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Work:
    """The work of one call, as the implementation does it.

    - `random_words`: 64-bit random words it draws (a float32 pair is one word, a float64 one word).
    - `memory_bytes`: bytes it moves through main memory (arrays too large for the caches, written
      and read back); 0 for a kernel that keeps everything in registers or in cache.
    - `calls`: framework operations it dispatches, each costing the framework's per-call overhead.
    - `framework`: whose overhead a call costs (a key of the machine's `overhead_s`: "python",
      "numpy", "numba", "torch", "jax", "tensorflow").
    - `threads`: the threads it runs on; None for all of the cell's threads.
    """

    random_words: float = 0.0
    memory_bytes: float = 0.0
    calls: float = 1.0
    framework: str = "python"
    threads: int | None = None
