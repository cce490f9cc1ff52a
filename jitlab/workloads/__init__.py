"""Workloads: the API (`Workload`, `Context`, `Prepared`), the registry and the built-in workloads."""

from jitlab.workloads.api import Case, Context, Prepared, Workload
from jitlab.workloads.registry import builtin_workloads, load_workloads, register_workload

__all__ = [
    "Case",
    "Context",
    "Prepared",
    "Workload",
    "builtin_workloads",
    "load_workloads",
    "register_workload",
]
