"""The envelope of every `--json` output: which document it is and at which version, which jitlab
wrote it, on which machine(s), with which options.

Scripts and CI jobs keep JSON files for years; without a schema tag they cannot tell what they hold
once jitlab's output changes. `schema` is `jitlab.<kind>/<version>`: the version goes up only when a
documented field changes meaning or disappears (new fields may appear at any time, so readers must
ignore what they do not know). The run document is described by `jitlab/schemas/run.schema.json`.

The envelope is where a command's options become output, so it is where secrets are masked
(`jitlab.secrets`): a `--store` URL's password once reached every CI log through `options`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jitlab.secrets import mask_secrets
from jitlab.store.identity import by_machine, machine_label
from jitlab.store.machine import machine_fingerprint
from jitlab.store.records import CellRecord, RunRecord

#: the version of every jitlab JSON document kind (run, runs, compare, history, doctor, ...)
SCHEMA_VERSION = 1


def schema_tag(kind: str) -> str:
    """'run' -> 'jitlab.run/1'."""
    return f"jitlab.{kind}/{SCHEMA_VERSION}"


def machine_json(info: Mapping[str, Any]) -> dict[str, Any]:
    """Stored machine metadata plus the fingerprint that decides "same machine"."""
    return {**info, "fingerprint": machine_fingerprint(dict(info))}


def jsonable(value: Any) -> Any:
    """Options as JSON: tuples become lists, anything else unknown its string."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    return str(value)


def envelope(
    kind: str,
    payload: Mapping[str, Any],
    options: Mapping[str, Any],
    machine: Mapping[str, Any] | None = None,
    machines: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """`payload` wrapped with `schema`, `jitlab_version`, `options` and `machine` (one machine) or
    `machines` (several, keyed by the machine's name or fingerprint, as cells' `machine` name them).
    Every secret in it (a store URL's password, a credential variable's value) is masked."""
    from jitlab import __version__

    out: dict[str, Any] = {
        "schema": schema_tag(kind),
        "jitlab_version": __version__,
        "options": jsonable(options),
    }
    if machine is not None:
        out["machine"] = machine_json(machine)
    if machines is not None:
        out["machines"] = {machine_label(dict(info)): machine_json(info) for info in machines}
    out.update(payload)
    return mask_secrets(out)


def cell_machines(cells: Iterable[CellRecord]) -> list[dict[str, Any]]:
    """The metadata of the machines that measured `cells`, one per machine, in first-seen order."""
    return [group[0].machine for group in by_machine(cells).values() if group]


def run_machines(run: RunRecord, cells: Iterable[CellRecord]) -> list[dict[str, Any]] | None:
    """For a run's envelope: the machines of its cells when they are not just the run's own machine
    (a run on a cluster, or cells imported from elsewhere); None when the run's `machine` says it all."""
    machines = cell_machines(cells)
    labels = [machine_label(m) for m in machines]
    return machines if labels and labels != [machine_label(run.machine)] else None
