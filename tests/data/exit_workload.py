"""Workloads whose worker process misbehaves after its result: for the tests of how a worker ends
(`jitlab.engine.worker.leave_now` and the runner reaping the worker's process group)."""

import atexit
import os
import subprocess
import time

import jitlab

shutdown_hangs = jitlab.Workload("shutdown_hangs", sizes=[1], reference=1.0, seeds=1)
leaves_a_child = jitlab.Workload("leaves_a_child", sizes=[1], reference=1.0, seeds=1)


@shutdown_hangs.implement("python")
def _hangs_at_exit(ctx):
    # registered when the cell is built, so only in the worker (the parent loads this file too):
    # an interpreter teardown that never ends, like a framework whose shutdown waits on a thread
    atexit.register(time.sleep, 10**6)
    return lambda seed: 1.0


@leaves_a_child.implement("python")
def _spawns_a_child(ctx):
    # a child in the worker's process group that outlives the worker, like a compiler's worker pool
    child = subprocess.Popen(["sleep", "600"])
    with open(os.environ["EXIT_CHILD_PID_FILE"], "a") as f:
        f.write(f"{child.pid}\n")
    return lambda seed: 1.0
