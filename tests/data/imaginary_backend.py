"""A workload file that registers a third-party backend whose framework is not installed."""

import jitlab


@jitlab.register_backend
class ImaginaryBackend(jitlab.Backend):
    name = "imaginary"
    modules = ("jitlab_imaginary_framework",)
    distribution = "jitlab-imaginary-framework"
    extra = "imaginary"


square = jitlab.Workload("square", sizes=[3], reference=9.0)


@square.implement("python")
def _python(ctx):
    return lambda seed: float(ctx.size**2)


@square.implement("imaginary")
def _imaginary(ctx):
    raise AssertionError("never built: the backend is not installed")
