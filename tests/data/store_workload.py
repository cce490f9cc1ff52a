"""A workload for the store tests: `python` cells that are quick to measure at any size, and `numpy`
cells that fail with the store's URL and a credential variable in their output and traceback (what a
careless user's code could print), to check that no secret is stored or shown."""

import os
import sys

import jitlab

steady = jitlab.Workload("steady", sizes=[1, 2, 3, 4], reference=1.0, seeds=1)


@steady.implement("python")
def _quick(ctx):
    return lambda seed: 1.0


@steady.implement("numpy")
def _leaky(ctx):
    secrets = f"{os.environ.get('JITLAB_STORE', '')} {os.environ.get('PGPASSWORD', '')}"
    print(f"connecting with {secrets}", file=sys.stderr)
    raise RuntimeError(f"cannot log in with {secrets}")
