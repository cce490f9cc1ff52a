"""Workload registry: built-in workloads by name, and workloads loaded from users' Python files."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from jitlab.errors import UserError
from jitlab.workloads.api import Workload

_WORKLOADS: dict[str, Workload] = {}
BUILTIN_MODULES = ("jitlab.workloads.pi",)


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
    if looks_like_file(target):
        return load_file(target)
    known = builtin_workloads()
    if target not in known:
        raise UserError(
            f"unknown workload {target!r}: choose from {', '.join(sorted(known))}, or give a path to a .py file"
        )
    return [known[target]]


def load_file(path: str) -> list[Workload]:
    file = Path(path).resolve()
    if not file.is_file():
        raise UserError(f"workload file {path} does not exist: check the path")
    module_name = f"_jitlab_user_{abs(hash(str(file)))}"
    if module_name in sys.modules:
        module = sys.modules[module_name]
    else:
        spec = importlib.util.spec_from_file_location(module_name, file)
        if spec is None or spec.loader is None:
            raise UserError(f"cannot load {path} as Python: give a .py file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's file is broken: say where, keep it one line
            del sys.modules[module_name]
            raise UserError(f"workload file {path} failed to load: {type(exc).__name__}: {exc}") from exc
    found = [value for value in vars(module).values() if isinstance(value, Workload)]
    if not found:
        raise UserError(
            f"workload file {path} defines no jitlab.Workload: create one with jitlab.Workload(...)"
        )
    for workload in found:
        workload.source_file = str(file)
    return found


def find_workload(name: str, source_file: str | None) -> Workload:
    """Used by worker processes to get back the workload their parent chose."""
    candidates = load_file(source_file) if source_file else [builtin_workloads()[name]]
    for workload in candidates:
        if workload.name == name:
            return workload
    raise UserError(f"workload {name!r} not found in {source_file}")
