"""pyperf's JSON format (https://pyperf.readthedocs.io, "JSON format" version 1.0), both ways.

Out: `pyperf_suite_from_run` turns a run into a pyperf suite that `python -m pyperf show`, `stats`,
`hist` and `compare_to` read. Each measured cell is one benchmark named
`workload/backend/n=SIZE[/params]` with one pyperf run per worker process of the cell (pyperf's runs
are its worker processes too): each process's steady-state samples as `values` (seconds per call,
what pyperf's values are), the first call as a warm-up of one loop in the first run, `loops`, `unit`
and each process's peak memory as `mem_max_rss`. Cells without a measurement have no place in pyperf's format and are
counted in the suite's metadata.

In: `run_from_pyperf` turns a pyperf suite (from pyperf itself, or exported by jitlab) into plain
records for one run: a cell per benchmark, whose samples are the values of all its runs, each run
one worker process of the cell (so its CI and noise floor count the spread between pyperf's
processes), and whose machine comes from pyperf's metadata. Files jitlab exported keep their
workload, backend, size, parameters, first call and machine exactly (`jitlab_*` metadata).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from jitlab.errors import UserError
from jitlab.store import CellRecord, RunRecord
from jitlab.store.identity import machine_naming

#: the pyperf JSON format version written and read
PYPERF_FORMAT = "1.0"


def benchmark_name(cell: CellRecord, machine: str = "") -> str:
    """`workload/backend/n=SIZE[/k=v,...][/on=MACHINE]`: the machine only for runs of several."""
    name = f"{cell.workload}/{cell.backend}/n={cell.size}"
    if cell.params:
        name += "/" + ",".join(f"{k}={v}" for k, v in sorted(cell.params.items()))
    if machine:
        name += f"/on={machine}"
    return name


def _date(iso: str | None) -> str | None:
    """pyperf writes dates with a space between day and time."""
    return iso.replace("T", " ").split("+")[0] if iso else None


def _clean(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """pyperf accepts int, float and non-empty one-line strings as metadata values."""
    out = {}
    for key, value in metadata.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, str):
            value = " ".join(value.split())
            if not value:
                continue
        if isinstance(value, (int, float, str)):
            out[key] = value
    return out


def pyperf_suite_from_run(run: RunRecord, cells: Sequence[CellRecord]) -> dict[str, Any]:
    """The run as a pyperf suite (a JSON-serialisable dict)."""
    from jitlab import __version__

    machine = run.machine
    measured = [c for c in cells if c.ok and c.samples_s and min(c.samples_s) > 0]
    suite_metadata = _clean(
        {
            "hostname": machine.get("hostname"),
            "cpu_model_name": machine.get("cpu"),
            "cpu_count": machine.get("cores_logical"),
            "platform": machine.get("os"),
            "python_version": machine.get("python"),
            "jitlab_version": __version__,
            "jitlab_run_id": run.run_id,
            "jitlab_target": run.target,
            "jitlab_machine": _compact(machine),
            "jitlab_cells_without_measurement": len(cells) - len(measured),
        }
    )
    machine = machine_naming(measured)
    benchmarks = []
    for cell in measured:
        machine_name = machine(cell)
        bench_metadata = _clean(
            {
                "name": benchmark_name(cell, machine_name),
                # on a run of several machines, each benchmark's own machine (pyperf has one a file)
                "jitlab_cell_machine": _compact(cell.machine) if machine_name else None,
                "unit": "second",
                "loops": cell.loops if cell.loops and cell.loops >= 1 else None,
                "jitlab_workload": cell.workload,
                "jitlab_backend": cell.backend,
                "jitlab_size": cell.size,
                "jitlab_params": json.dumps(cell.params, sort_keys=True) if cell.params else None,
                "jitlab_backend_version": cell.backend_version,
                "jitlab_device": cell.device,
                "jitlab_timing_method": cell.timing_method,
                "jitlab_threads": cell.threads,
            }
        )
        benchmarks.append({"metadata": bench_metadata, "runs": _pyperf_runs(cell)})
    return {"version": PYPERF_FORMAT, "metadata": suite_metadata, "benchmarks": benchmarks}


def _pyperf_runs(cell: CellRecord) -> list[dict[str, Any]]:
    """One pyperf run per worker process of the cell, in the order of its samples; the first call
    (process 0's cold call) is the first run's warm-up."""
    owners = list(cell.sample_process) if len(cell.sample_process) == len(cell.samples_s) else []
    order = list(dict.fromkeys(owners)) or [0]
    peaks = {d.get("process"): d.get("peak_rss_bytes") for d in cell.process_details}
    runs = []
    for position, process in enumerate(order):
        values = [
            v for v, owner in zip(cell.samples_s, owners or [0] * len(cell.samples_s)) if owner == process
        ]
        first = position == 0
        metadata = _clean(
            {
                "date": _date(cell.finished_at),
                "mem_max_rss": peaks.get(process) or (cell.peak_rss_bytes if first else None),
                "jitlab_process": process if owners else None,
                "jitlab_first_call_s": cell.first_call_s if first else None,
                "jitlab_error": cell.error if first else None,
            }
        )
        run_data: dict[str, Any] = {"values": values}
        if first and cell.first_call_s is not None and cell.first_call_s >= 0:
            run_data["warmups"] = [[1, cell.first_call_s]]
        if metadata:
            run_data["metadata"] = metadata
        runs.append(run_data)
    return runs


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def looks_like_pyperf(data: Any) -> bool:
    return isinstance(data, dict) and "benchmarks" in data and "version" in data


def _machine_from(metadata: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(metadata.get("jitlab_machine"), str):
        try:
            return json.loads(metadata["jitlab_machine"])
        except ValueError:
            pass
    python = str(metadata.get("python_version", "")).split(" ")[0] or None
    return {
        "hostname": metadata.get("hostname"),
        "cpu": metadata.get("cpu_model_name") or "unknown CPU",
        "cores_logical": metadata.get("cpu_count"),
        "cores_physical": None,
        "memory_bytes": None,
        "os": metadata.get("platform"),
        "python": python,
        "gpus": [],
        "backends": {},
        "project_commit": None,
        "source": "pyperf",
    }


def _cell_machine(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    """The machine of one benchmark of a jitlab export of several machines; None: the suite's."""
    try:
        info = json.loads(metadata["jitlab_cell_machine"])
    except (KeyError, TypeError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _int(value: Any, default: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if number >= 1 else default


def run_from_pyperf(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Plain records of one run from a pyperf suite: `target`, `workloads`, `backends`, `sizes`,
    `options`, `machine` and `cells` (each `workload`, `backend`, `size`, `params`, `machine` (None:
    the run's) and the `result` the store saves). A document pyperf could not read either is a `UserError`."""
    if not looks_like_pyperf(data):
        raise UserError(f"{source} is not a pyperf JSON file: it has no 'version' and 'benchmarks'")
    if str(data["version"]) != PYPERF_FORMAT:
        raise UserError(
            f"{source} is pyperf JSON format {data['version']!r}; jitlab reads format {PYPERF_FORMAT} "
            "(pyperf 1.0 and later): convert it with `python -m pyperf convert --stdout FILE`"
        )
    suite_metadata = dict(data.get("metadata") or {})
    cells: list[dict[str, Any]] = []
    seen: set[tuple[str, str, int, str, str]] = set()
    for index, bench in enumerate(data["benchmarks"]):
        common = {**suite_metadata, **(bench.get("metadata") or {})}
        runs = bench.get("runs") or []
        values: list[float] = []
        sample_process: list[int] = []
        loops: set[int] = set()
        memory: list[int] = []
        for run in runs:
            metadata = {**common, **(run.get("metadata") or {})}
            run_values = [float(v) for v in run.get("values") or []]
            if not run_values:
                continue  # a calibration run: no values
            if min(run_values) <= 0:
                raise UserError(
                    f"{source}: benchmark {index} has a value <= 0: pyperf values are positive times"
                )
            # jitlab's own export names each run's worker process (a process measured again after
            # a slow spell keeps its number: 0, 2, 3); other pyperf files number runs in order
            own = metadata.get("jitlab_process")
            process = own if type(own) is int and own not in sample_process else len(set(sample_process))
            sample_process += [process] * len(run_values)
            values += run_values
            loops.add(_int(metadata.get("loops"), 1) * _int(metadata.get("inner_loops"), 1))
            if isinstance(metadata.get("mem_max_rss"), int):
                memory.append(metadata["mem_max_rss"])
        name = common.get("name")
        if not name:
            raise UserError(f"{source}: benchmark {index} has no name (pyperf requires one)")
        if not values:
            continue
        unit = common.get("unit", "second")
        if unit != "second":
            raise UserError(
                f"{source}: benchmark {name!r} measures {unit}s, not time: jitlab stores times only"
            )
        workload = str(common.get("jitlab_workload") or name)
        backend = str(common.get("jitlab_backend") or "pyperf")
        size = _int(common.get("jitlab_size"), 1)
        params = json.loads(common["jitlab_params"]) if common.get("jitlab_params") else {}
        key = (
            workload,
            backend,
            size,
            json.dumps(params, sort_keys=True),
            str(common.get("jitlab_cell_machine")),
        )
        if key in seen:
            raise UserError(f"{source}: benchmark {name!r} appears twice")
        seen.add(key)
        first_run = next((r for r in runs if r.get("values")), {})
        first_call = (first_run.get("metadata") or {}).get("jitlab_first_call_s")
        cells.append(
            {
                "workload": workload,
                "backend": backend,
                "size": size,
                "params": params,
                "machine": _cell_machine(bench.get("metadata") or {}),
                "result": {
                    "status": "ok",
                    "samples_s": values,
                    "loops": loops.pop() if len(loops) == 1 else None,
                    "first_call_s": float(first_call) if isinstance(first_call, (int, float)) else None,
                    "peak_rss_bytes": max(memory) if memory else None,
                    "backend_version": common.get("jitlab_backend_version"),
                    "device": common.get("jitlab_device"),
                    "timing_method": common.get("jitlab_timing_method"),
                    "threads": common.get("jitlab_threads"),
                    # each pyperf run is one worker process: its samples keep their process
                    "sample_process": sample_process if len(set(sample_process)) > 1 else [],
                    "warnings": [],
                },
            }
        )
    if not cells:
        raise UserError(f"{source}: no benchmark with values to import")
    return {
        "target": str(suite_metadata.get("jitlab_target") or f"pyperf:{source}"),
        "workloads": list(dict.fromkeys(c["workload"] for c in cells)),
        "backends": [],
        "sizes": None,
        "options": {"imported_from": source, "format": "pyperf", "pyperf_format": str(data["version"])},
        "machine": _machine_from(suite_metadata),
        "cells": cells,
    }
