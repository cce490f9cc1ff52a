"""Workloads for the cluster tests: cells with a known set-up time, and a backend some nodes lack."""

import os
import time

import jitlab

#: seconds of set-up per unit of size, so a cell's length is known (size 4 adds a second)
SETUP_S = 0.25


@jitlab.register_backend
class NodeOnlyBackend(jitlab.Backend):
    """Stands for a framework installed on some machines only (where JITLAB_TEST_FRAMEWORK=1)."""

    name = "node-only"

    def is_available(self) -> bool:
        return os.environ.get("JITLAB_TEST_FRAMEWORK") == "1"


sleepy = jitlab.Workload("sleepy", sizes=[1, 2], reference=1.0, seeds=1)


@sleepy.implement("python")
def _python(ctx):
    time.sleep(ctx.size * SETUP_S)
    return lambda seed: 1.0


@sleepy.implement("node-only")
def _node_only(ctx):
    return lambda seed: 1.0
