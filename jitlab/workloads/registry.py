"""Workload registry: built-in workloads by name, and workloads loaded from users' Python files."""

from __future__ import annotations

import importlib
from pathlib import Path

from jitlab.errors import UserError
from jitlab.store.urls import looks_like_url
from jitlab.userfiles import import_file
from jitlab.workloads.api import Workload

_WORKLOADS: dict[str, Workload] = {}
BUILTIN_MODULES = (
    "jitlab.workloads.pi",
    "jitlab.workloads.sampler",
    "jitlab.workloads.fusion",
    "jitlab.workloads.overhead",
    "jitlab.workloads.async_steps",
)


def register_workload(workload: Workload) -> Workload:
    if workload.name in _WORKLOADS and _WORKLOADS[workload.name] is not workload:
        raise ValueError(f"a workload named {workload.name!r} is registered already")
    _WORKLOADS[workload.name] = workload
    return workload


def builtin_workloads() -> dict[str, Workload]:
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    return dict(_WORKLOADS)


def looks_like_file(target: str) -> bool:
    return target.endswith(".py") or "/" in target or Path(target).is_file()


def load_workloads(target: str) -> list[Workload]:
    """The workloads named by `target`: a built-in name, or every `Workload` in a Python file."""
    if looks_like_url(target):
        raise UserError(
            f"{target} looks like a URL: jitlab runs workloads from local files; download it and give its path"
        )
    if looks_like_file(target):
        return load_file(target)
    known = builtin_workloads()
    if target not in known:
        raise UserError(
            f"unknown workload {target!r}: choose from {', '.join(sorted(known))}, or give a path to a .py file"
        )
    return [known[target]]


def load_file(path: str) -> list[Workload]:
    module = import_file(path, "workload file")
    found = [value for value in vars(module).values() if isinstance(value, Workload)]
    if not found:
        raise UserError(
            f"workload file {path} defines no jitlab.Workload: create one with jitlab.Workload(...)"
        )
    for workload in found:
        workload.source_file = str(Path(path).resolve())
    return found


def find_workload(name: str, source_file: str | None) -> Workload:
    """Used by worker processes to get back the workload their parent chose."""
    candidates = load_file(source_file) if source_file else [builtin_workloads()[name]]
    for workload in candidates:
        if workload.name == name:
            return workload
    raise UserError(f"workload {name!r} not found in {source_file}")
