"""What runs on a cluster node, as the body of a Ray task: describe the node, measure one process of
a cell (a run measures its cells in rounds), or remove a run's cell folders at its end.

Measuring still happens in a fresh worker process started on the node
(`jitlab.engine.runner.measure_process`): the Ray task is only that process's parent there. Files the
job needs (a workload file, capture corpora) are sent along; a node that has the same file at the
same path uses it, any other gets a copy in a scratch folder.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any


def describe_node() -> dict[str, Any]:
    """The node's machine metadata (as `jitlab run` records for its own machine) and jitlab's version."""
    import importlib.metadata

    from jitlab.store.machine import machine_info

    info = machine_info()
    info.pop("project_commit", None)  # the project is the driver's; its commit is the run's
    try:
        info["jitlab"] = importlib.metadata.version("jitlab")
    except importlib.metadata.PackageNotFoundError:
        info["jitlab"] = None
    return info


def read_files(paths: list[str | None]) -> dict[str, str]:
    """{path: text} of the files a job needs, read on the driver."""
    return {str(p): Path(p).read_text() for p in paths if p and Path(p).is_file()}


@contextmanager
def files_on_node(shipped: dict[str, str]) -> Iterator[dict[str, str]]:
    """{driver path: path on this node} with the same content, writing copies where needed."""
    mapping: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="jitlab-shipped-") as scratch:
        for path, text in shipped.items():
            here = Path(path)
            try:
                same = here.is_file() and here.read_text() == text
            except OSError:
                same = False
            if same:
                mapping[path] = path
                continue
            folder = Path(scratch) / hashlib.sha256(path.encode()).hexdigest()[:12]
            folder.mkdir()
            copy = folder / here.name
            copy.write_text(text)
            mapping[path] = str(copy)
        yield mapping


def measure_process_on_node(
    spec_json: dict[str, Any],
    index: int,
    timeout_s: float,
    shipped: dict[str, str],
    token: str,
    scratch_key: str,
) -> dict[str, Any]:
    """Measure process `index` of one cell on this node in its own worker process (the canary read
    before it), in the cell's folder on this node, which its later processes find again (a run in
    rounds: `jitlab.engine.rounds`). Returns the process's result as a plain object."""
    from jitlab.engine.runner import measure_process, scratch_root
    from jitlab.engine.spec import CellSpec
    from jitlab.errors import UserError
    from jitlab.workloads.registry import load_workloads

    spec = CellSpec.from_json(spec_json)
    with files_on_node(shipped) as mapping:
        if spec.source_file in mapping:
            spec = replace(spec, source_file=mapping[spec.source_file])
        try:
            if spec.source_file:
                load_workloads(spec.source_file)  # it may register backends of its own
            result = measure_process(spec, index, timeout_s, scratch_root(token) / scratch_key, canary=True)
            return result.to_dict()  # a plain object crosses to the driver (`ProcessResult.received`)
        except UserError as exc:  # e.g. a backend this node does not know
            return {"status": "unavailable", "reason": f"on this node: {exc}"}
