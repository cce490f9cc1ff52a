"""Busy-waits at two sizes (the size does not change the cost): 3 ms per call on "python", 100 µs
on "numpy", for the tests of a run measured in rounds."""

import time

import jitlab

spin = jitlab.Workload("spin", sizes=[1, 2], reference=1.0, seeds=1)


def _busy(seconds):
    def fn(seed):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
        return 1.0

    return fn


@spin.implement("python")
def _python(ctx):
    return _busy(3e-3)


@spin.implement("numpy")
def _numpy(ctx):
    return _busy(100e-6)
