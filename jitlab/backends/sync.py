"""Waiting for results and bringing them to the host, whatever framework made them.

Used by the backends and by the `@jitlab.timed` decorator, which does not know which JIT produced
the value it times. Frameworks are recognised by the module of the value's type, so nothing is
imported that the user's code did not import already.
"""

from __future__ import annotations

import sys
from typing import Any


def _framework(value: Any) -> str:
    return type(value).__module__.split(".", 1)[0]


def block_until_done(value: Any) -> None:
    """Wait until every array in `value` (possibly nested in tuples, lists, dicts) is computed."""
    if isinstance(value, (tuple, list)):
        for item in value:
            block_until_done(item)
        return
    if isinstance(value, dict):
        for item in value.values():
            block_until_done(item)
        return
    framework = _framework(value)
    if framework in ("jax", "jaxlib"):
        value.block_until_ready()
    elif framework == "torch":
        torch = sys.modules["torch"]
        if isinstance(value, torch.Tensor) and value.device.type == "cuda":
            torch.cuda.synchronize(value.device)
    elif framework == "tensorflow":
        # TensorFlow has no public "wait" on an eager tensor; reading it to the host is the wait.
        if hasattr(value, "numpy"):
            value.numpy()


def to_host_value(value: Any) -> Any:
    """NumPy array or Python scalar holding `value`'s content."""
    if isinstance(value, (tuple, list)):
        return type(value)(to_host_value(v) for v in value)
    framework = _framework(value)
    if framework == "torch":
        value = value.detach().cpu().numpy()
    elif framework in ("jax", "jaxlib", "tensorflow"):
        import numpy as np

        value = np.asarray(value)
    if hasattr(value, "shape") and getattr(value, "shape", None) == ():
        return value.item()
    return value
