"""A user workload whose behaviour depends on which of its cell's worker processes runs it
(`JITLAB_PROCESS_INDEX`): for the engine's tests of cells measured in several processes."""

import os
import time

import jitlab

PROCESS = int(os.environ.get("JITLAB_PROCESS_INDEX", "0"))

steady = jitlab.Workload("steady", sizes=[1], reference=1.0)
first_call_fails = jitlab.Workload("first_call_fails", sizes=[1], reference=1.0)
result_differs = jitlab.Workload("result_differs", sizes=[1], reference=1.0)
within_error = jitlab.Workload("within_error", sizes=[1], reference=1.0, expected_error=lambda n: 0.1)
slow_first_call = jitlab.Workload("slow_first_call", sizes=[1], reference=1.0)


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@steady.implement("python")
def _steady(ctx):
    def fn(seed):
        _spin(200e-6)
        return 1.0

    return fn


@first_call_fails.implement("python")
def _fails_in_process_1(ctx):
    def fn(seed):
        if PROCESS == 1:
            raise RuntimeError("only process 1 fails")
        return 1.0

    return fn


@result_differs.implement("python")
def _differs(ctx):
    return lambda seed: 1.0 + 0.5 * PROCESS


@within_error.implement("python")
def _within(ctx):
    return lambda seed: 1.0 + 0.01 * PROCESS


@slow_first_call.implement("python")
def _compiles_first(ctx):
    """A first call that costs 1.5 s in every process, as a JIT without a disk cache compiles again."""
    compiled = []

    def fn(seed):
        if not compiled:
            _spin(1.5)
            compiled.append(True)
        _spin(200e-6)
        return 1.0

    return fn
