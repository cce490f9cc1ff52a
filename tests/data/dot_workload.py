"""A user workload with inputs and a float64 reference: the dot product of two float32 vectors."""

import numpy as np

import jitlab


def make_inputs(case):
    rng = case.rng
    return rng.random(case.size, dtype=np.float32), rng.random(case.size, dtype=np.float32)


def reference(case, inputs):
    a, b = inputs
    return float(np.dot(a.astype(np.float64), b.astype(np.float64)))


dot = jitlab.Workload("dot", sizes=[1000, 100000], inputs=make_inputs, reference=reference, seeds=3)


@dot.implement("numpy")
def _numpy(ctx):
    # inputs are built outside the timed call: Prepared(fn, args=seed -> arguments)
    return jitlab.Prepared(lambda a, b: a @ b, args=ctx.inputs)


@dot.implement("python")
def _python(ctx):
    def run(a, b):
        return sum(x * y for x, y in zip(a, b))

    return jitlab.Prepared(run, args=lambda seed: tuple(v.astype(float).tolist() for v in ctx.inputs(seed)))
