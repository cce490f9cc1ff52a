"""The workloads `jitlab selfcheck` measures through the real engine: busy-waits of known cost.

This module is a workload file like a user's (worker processes load it by path), so the selfcheck
goes through exactly the code `jitlab run` uses. The size of a cell is the cost in nanoseconds.

- `selfcheck-grid`: each call ends on a fixed grid spaced `cost` apart. While the loop around the
  calls (jitlab's harness, the function call, the clock reads) costs less than `cost`, every call
  lasts exactly `cost` as the caller sees it, so a correctly measuring harness must report `cost`.
  A call that starts after its grid point has passed (the process was descheduled, or the overhead
  exceeds the cost) starts a new grid and waits a full `cost`: the delay shows in the figure, as
  it would in any real code. This is what makes a 1 µs cost checkable at all in Python, where one
  clock read takes tens of nanoseconds.
- `selfcheck-spin`: waits `cost` from its own start, the way a user would write a busy-wait (the
  issue that asked for the selfcheck was a 2 ms one like it). Used for the comparisons, where what
  matters is that identical code gives identical verdicts, not the exact figure.
"""

from __future__ import annotations

import time

from jitlab.workloads.api import Context, Workload

clock = time.perf_counter

grid = Workload(
    "selfcheck-grid",
    description="calls ending on a grid spaced `size` nanoseconds apart",
    sizes=(1000,),
    size_name="ns",
    seeds=1,
)
spin = Workload(
    "selfcheck-spin",
    description="a busy-wait of `size` nanoseconds from the call's start",
    sizes=(2_000_000,),
    size_name="ns",
    seeds=1,
)


@grid.implement("python")
def _grid(ctx: Context):
    period = ctx.size * 1e-9
    deadline = [float("-inf")]

    def wait(seed: int) -> float:
        start = clock()
        end = deadline[0] + period
        if end <= start:  # late: a new grid starts at this call
            end = start + period
        while clock() < end:
            pass
        deadline[0] = end
        return period

    return wait


@spin.implement("python")
def _spin(ctx: Context):
    cost = ctx.size * 1e-9

    def wait(seed: int) -> float:
        end = clock() + cost
        while clock() < end:
            pass
        return cost

    return wait
