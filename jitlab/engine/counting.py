"""The measuring recipe of `--measure instructions`, run inside a process that Callgrind runs
(`jitlab.engine.valgrind`): instructions per call instead of seconds per call.

1. First call (compile + run), uninstrumented, as in wall-time mode.
2. Warm-up calls, uninstrumented: the interpreter specialises its bytecode over the first calls
   (CPython 3.11+), caches fill, lazy imports happen; none of it belongs to the steady state.
3. Instrumentation on. An empty block (counting switched on and straight off again) measures the
   cost of the switch itself, which is subtracted from every block.
4. Calibrate: a block of one call says how many calls make a block of about `BLOCK_INSTRUCTIONS`.
5. Count `samples` blocks; each sample is (count - empty block) / calls.
6. Instrumentation off, so whatever the process does next runs at uninstrumented speed.

Every block's calls go through the backend's synchronisation, as timed calls do. The counts do not
depend on the machine's load: a busy machine only makes this take longer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jitlab.engine.valgrind import Callgrind
from jitlab.engine.valgrind import callgrind as shared_callgrind

#: a counted block holds about this many instructions (a few tenths of a second under Callgrind)
BLOCK_INSTRUCTIONS = 20_000_000
#: uninstrumented calls before counting (at least two; more while they take under WARMUP_S), and
#: blocks counted (fewer for calls of over LARGE_CALL instructions, which take seconds each)
WARMUP_CALLS = 5
WARMUP_S = 2.0
DEFAULT_SAMPLES = 5
LARGE_CALL = 200_000_000
LARGE_CALL_SAMPLES = 3
MAX_CALLS_PER_BLOCK = 100_000


@dataclass
class CountResult:
    first_value: Any
    #: instructions per call of each counted block
    per_call: list[float]
    calls_per_block: int
    #: the instructions of switching the count on and off, subtracted from every block
    switch_cost: int
    warnings: list[str] = field(default_factory=list)


def _block(callgrind: Callgrind, call: Callable[[], Any], sync: Callable[[Any], None], calls: int) -> int:
    callgrind.zero()
    callgrind.toggle()
    for _ in range(calls):
        sync(call())
    callgrind.toggle()
    return callgrind.dump()


def count_instructions(
    call: Callable[[], Any],
    sync: Callable[[Any], None],
    samples: int = DEFAULT_SAMPLES,
    callgrind: Callgrind | None = None,
) -> CountResult:
    """Count the instructions of `call` by the recipe above (the process must run under Callgrind)."""
    callgrind = callgrind or shared_callgrind()
    value = call()
    sync(value)
    started = time.perf_counter()
    for done in range(WARMUP_CALLS):
        if done >= 2 and time.perf_counter() - started > WARMUP_S:
            break
        sync(call())
    callgrind.start()
    try:
        switch = min(_block(callgrind, call, sync, 0) for _ in range(3))
        one = max(_block(callgrind, call, sync, 1) - switch, 1)
        calls = max(1, min(MAX_CALLS_PER_BLOCK, math.ceil(BLOCK_INSTRUCTIONS / one)))
        samples = min(samples, LARGE_CALL_SAMPLES) if one > LARGE_CALL else samples
        per_call = [max(_block(callgrind, call, sync, calls) - switch, 0) / calls for _ in range(samples)]
    finally:
        callgrind.stop()
    warnings = []
    if min(per_call) <= 0:
        warnings.append("no instructions counted: the calls ran outside what Callgrind instruments")
    return CountResult(value, per_call, calls, switch, warnings)
