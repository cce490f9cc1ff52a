"""What `jitlab import SOURCE...` reads: each source is recognised by what it is, not by its name,
and turned into runs that `jitlab.store.importing.import_run` stores without duplicates.

- a store: a PostgreSQL URL, or a file that begins with SQLite's header;
- a `jitlab export --format json` file (a run with raw samples, or a list of them);
- a pyperf JSON suite (from pyperf itself or `jitlab export --format pyperf`).

Files may be gzip-compressed (pyperf writes `.json.gz`). Every file is read and checked, and every
store opened, before anything is stored, so a bad source in the list changes nothing.

A run is the same run wherever it comes from when its UUID is the same. jitlab's own runs carry
theirs; a pyperf file has none, so its run's UUID is derived from the file's content: the same file
imported twice is imported once, whatever it is named and whatever `--machine` says.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jitlab.errors import UserError
from jitlab.store import CellRecord, RunRecord, Store
from jitlab.store.importing import (
    ImportReport,
    import_runs,
    is_sqlite_file,
    looks_like_export,
    read_store,
    runs_from_export,
)
from jitlab.store.urls import looks_like_url, parse_store

#: what a source can be, as `--json` and the messages name it
STORE, EXPORT, PYPERF = "jitlab-store", "jitlab-export", "pyperf"
WHAT_IS_IMPORTED = (
    "a jitlab store (SQLite file or postgresql:// URL), a `jitlab export --format json` file, "
    "or a pyperf JSON file (optionally gzip-compressed)"
)

RunsReader = Callable[[], Iterator[tuple[RunRecord, list[CellRecord]]]]


@dataclass(frozen=True)
class Source:
    """One argument of `jitlab import`, recognised: `read()` yields its runs with their cells."""

    given: str
    display: str
    format: str
    read: RunsReader


def identify(given: str, machine_name: str | None = None) -> Source:
    """Recognise `given` and check it can be read; a `UserError` (one line) when it cannot.
    `machine_name` names the machine of a pyperf file's results; jitlab's runs keep their own."""
    if looks_like_url(given):
        location = parse_store(given)  # an unsupported scheme is a UserError here
        _refuse_machine(machine_name, location.display)
        Store(given, create=False).close()  # unreachable, or not a jitlab store: refused now
        return Source(given, location.display, STORE, lambda: read_store(given))
    path = Path(given)
    if not path.exists():
        raise UserError(f"{given} does not exist: give {WHAT_IS_IMPORTED}")
    if not path.is_file():
        raise UserError(f"{given} is not a file: give {WHAT_IS_IMPORTED}")
    try:
        if is_sqlite_file(path):
            _refuse_machine(machine_name, given)
            return Source(given, given, STORE, lambda: read_store(given))
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {given}: {exc.strerror}") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise UserError(f"{given} looks gzip-compressed but cannot be decompressed: {exc}") from exc
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise UserError(f"{given}: not a format jitlab imports: give {WHAT_IS_IMPORTED}") from None
    from jitlab.interop.pyperf import looks_like_pyperf

    if looks_like_pyperf(data):
        runs = [pyperf_run(data, raw, given, machine_name)]
        return Source(given, given, PYPERF, lambda: iter(runs))
    if looks_like_export(data):
        _refuse_machine(machine_name, given)
        exported = runs_from_export(data, given)  # every run checked now
        return Source(given, given, EXPORT, lambda: iter(exported))
    raise UserError(f"{given}: not a format jitlab imports: give {WHAT_IS_IMPORTED}")


def _refuse_machine(machine_name: str | None, source: str) -> None:
    if machine_name is not None:
        raise UserError(
            f"--machine names the machine of pyperf files' results; the runs of {source} keep the "
            "machines jitlab recorded: drop --machine for it (or import it on its own)"
        )


def pyperf_run(
    data: Any, raw: bytes, source: str, machine_name: str | None
) -> tuple[RunRecord, list[CellRecord]]:
    """The run of a pyperf suite, with a UUID derived from the file's (decompressed) bytes."""
    from jitlab.interop.pyperf import run_from_pyperf
    from jitlab.store.database import cell_from_result, now
    from jitlab.store.migrations import content_run_uuid

    records = run_from_pyperf(data, source)
    machine = dict(records["machine"])
    if machine_name is not None:
        machine["name"] = machine_name
    imported_at = now()
    run = RunRecord(
        run_id=0,
        created_at=imported_at,
        finished_at=imported_at,
        status="finished",
        target=records["target"],
        workloads=tuple(records["workloads"]),
        backends=tuple(records["backends"]),
        sizes=tuple(records["sizes"]) if records["sizes"] else None,
        options=dict(records["options"]),
        machine=machine,
        uuid=content_run_uuid(PYPERF, raw),
    )
    cells = [
        replace(
            cell_from_result(
                0, c["workload"], c["backend"], c["size"], c["params"], c["result"], c.get("machine")
            ),
            finished_at=imported_at,
        )
        for c in records["cells"]
    ]
    return run, cells


def import_sources(store: Store, sources: Iterable[Source]) -> ImportReport:
    """Import every run of `sources` that `store` lacks; the report lists what was imported and
    what was already there."""
    report = ImportReport(store=str(store.path))
    for source in sources:
        import_runs(store, source.read(), report, source.display, source.format)
    return report
