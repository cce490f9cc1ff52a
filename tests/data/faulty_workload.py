"""A user workload whose implementations misbehave in every way a worker can: for engine tests."""

import os
import time

import jitlab

faulty = jitlab.Workload("faulty", sizes=[10], reference=1.0)


@faulty.implement("python")
def _ok(ctx):
    return lambda seed: 1.0


@faulty.implement("numpy")
def _raises(ctx):
    def fn(seed):
        raise ValueError("deliberate failure in the user's code")

    return fn


@faulty.implement("numba")
def _aborts(ctx):
    def fn(seed):
        os.abort()

    return fn


@faulty.implement("jax")
def _hangs(ctx):
    delay = float(os.environ.get("FAULTY_HANG_S", "600"))

    def fn(seed):
        time.sleep(delay)
        return 1.0

    return fn
