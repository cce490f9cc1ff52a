"""What kind of value the tracer is looking at: containers, library namespaces, plain objects.

Shared by the tracer's modules (reads and writes in tracer.py, native calls in native_calls.py, the
callbacks in lookasides.py) so that they classify values the same way.
"""

from __future__ import annotations

import types
from typing import Any

import torch
import torch.nn as nn

CONTAINERS = (list, tuple, dict)
MODULE_SEQUENCES = (nn.ModuleList, nn.Sequential)
LIBRARY_MODULE_ROOTS = {
    "torch", "math", "operator", "functools", "itertools", "builtins", "numpy", "collections",
    "typing", "dataclasses", "enum", "abc", "copy", "numbers", "string", "types", "warnings",
}  # fmt: skip


def module_root(obj: Any) -> str:
    name = getattr(obj, "__module__", None) or ""
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
    return name.split(".", 1)[0]


def plain_object(value: Any) -> bool:
    """An instance of an ordinary class (its attributes in __dict__), not a module, class or function."""
    if isinstance(
        value, (type, types.ModuleType, types.FunctionType, types.MethodType, nn.Module, torch.Tensor)
    ):
        return False
    return hasattr(value, "__dict__") and type(value).__module__ not in ("builtins",)
