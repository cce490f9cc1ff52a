"""A user workload whose cells end in every status: ok (python, numpy), failed and timed out
(numba), unavailable (any backend it does not implement, e.g. triton). Swept over `variant`, with a
declared baseline and throughput, so the derived tables of the run document are filled too."""

import math
import os
import time

import numpy as np

import jitlab


def make_inputs(case):
    return (case.rng.random(case.size),)


def reference(case, inputs):
    return math.fsum(inputs[0])


mixed = jitlab.Workload(
    "mixed", sizes=[100, 1000], inputs=make_inputs, reference=reference, sweep={"variant": ["loop", "vector"]}
)
mixed.baseline = lambda backend, params: ("python", {"variant": "loop"})
mixed.throughput = lambda size, params, backend: {"ops": size}


@mixed.implement("python")
def _python(ctx):
    fn = sum if ctx.params["variant"] == "loop" else math.fsum
    return jitlab.Prepared(fn, args=lambda seed: (ctx.inputs(seed)[0].tolist(),))


@mixed.implement("numpy")
def _numpy(ctx):
    fn = np.add.reduce if ctx.params["variant"] == "loop" else np.sum
    return jitlab.Prepared(fn, args=ctx.inputs)


@mixed.implement("numba")
def _numba(ctx):
    hang = ctx.size == 100 and ctx.params["variant"] == "loop"

    def fn(x):
        if hang:
            time.sleep(float(os.environ.get("MIXED_HANG_S", "600")))
        raise ValueError("deliberate failure")

    return jitlab.Prepared(fn, args=ctx.inputs)
