"""A workload with one fast cell and one slow cell (SLOW_S seconds per call): for interrupt tests.

With SLOW_PIDS set, the slow cell's worker appends its own pid to that file, then the pid of a
child it starts (`sleep`, in the worker's process group, like a compiler's worker pool), so a test
can check that neither outlives the run."""

import os
import subprocess
import time

import jitlab

slow = jitlab.Workload("slow", sizes=[1], reference=1.0, seeds=1)


@slow.implement("python")
def _fast(ctx):
    return lambda seed: 1.0


@slow.implement("numpy")
def _slow(ctx):
    delay = float(os.environ.get("SLOW_S", "0"))
    if "SLOW_PIDS" in os.environ:  # built in the worker only (the parent loads this file too)
        with open(os.environ["SLOW_PIDS"], "a") as f:
            f.write(f"{os.getpid()}\n")
            f.flush()
            f.write(f"{subprocess.Popen(['sleep', '600']).pid}\n")

    def fn(seed):
        time.sleep(delay)
        return 1.0

    return fn
