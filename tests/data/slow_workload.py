"""A workload with one fast cell and one slow cell (SLOW_S seconds per call): for interrupt tests."""

import os
import time

import jitlab

slow = jitlab.Workload("slow", sizes=[1], reference=1.0, seeds=1)


@slow.implement("python")
def _fast(ctx):
    return lambda seed: 1.0


@slow.implement("numpy")
def _slow(ctx):
    delay = float(os.environ.get("SLOW_S", "0"))

    def fn(seed):
        time.sleep(delay)
        return 1.0

    return fn
