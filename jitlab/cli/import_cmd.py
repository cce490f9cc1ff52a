"""`jitlab import FILE...`: bring results measured elsewhere into the store as runs.

Each file is recognised by its content, not its name, and handed to the first importer whose
`detect` accepts it. Built in here: pyperf JSON suites (also gzip-compressed, as pyperf writes
`.json.gz`). jitlab's own stores and JSON exports plug in the same way: register an `Importer`
whose `detect` recognises them (a SQLite header, a JSON object whose `schema` starts with
`jitlab.run/`) in `IMPORTERS`, before the fallback that reports them as not importable yet.
Importing the same file twice is refused: each run records the SHA-256 of the file it came from.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from jitlab.cli.app import app, console, json_option, store_option, with_envelope
from jitlab.errors import UserError
from jitlab.store import Store

SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class ImportSource:
    """A file to import: its path, raw bytes (decompressed) and, when it is JSON, its content."""

    path: Path
    raw: bytes
    sha256: str
    json: Any = None


@dataclass(frozen=True)
class Importer:
    """`detect(source)` says whether this importer reads the file; `load(store, source, machine)`
    writes it into the store and returns the new run ids."""

    name: str
    detect: Callable[[ImportSource], bool]
    load: Callable[[Store, ImportSource, str | None], list[int]]


def read_source(path: Path) -> ImportSource:
    if not path.is_file():
        raise UserError(f"{path} is not a file: give pyperf JSON files to import")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise UserError(f"{path} looks gzip-compressed but cannot be decompressed: {exc}") from exc
    data = None
    if not raw.startswith(SQLITE_HEADER):
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            data = None
    return ImportSource(path, raw, hashlib.sha256(raw).hexdigest(), data)


def already_imported(store: Store, sha256: str) -> int | None:
    for run in store.runs():
        if run.options.get("imported_sha256") == sha256:
            return run.run_id
    return None


def write_run(store: Store, records: dict[str, Any], source: ImportSource, machine_name: str | None) -> int:
    """Create a run from plain records (as `jitlab.interop` returns them) and save its cells."""
    machine = dict(records["machine"])
    if machine_name is not None:
        machine["name"] = machine_name
    options = {**records["options"], "imported_sha256": source.sha256}
    run_id = store.create_run(
        target=records["target"],
        workloads=records["workloads"],
        backends=records["backends"],
        sizes=records["sizes"],
        options=options,
        machine=machine,
    )
    try:
        for cell in records["cells"]:
            store.save_cell(
                run_id, cell["workload"], cell["backend"], cell["size"], cell["params"], cell["result"]
            )
    except BaseException:
        store.set_run_status(run_id, "interrupted")
        raise
    store.set_run_status(run_id, "finished")
    return run_id


def _load_pyperf(store: Store, source: ImportSource, machine_name: str | None) -> list[int]:
    from jitlab.interop.pyperf import run_from_pyperf

    records = run_from_pyperf(source.json, str(source.path))
    return [write_run(store, records, source, machine_name)]


def _not_yet(kind: str) -> Callable[[Store, ImportSource, str | None], list[int]]:
    def load(store: Store, source: ImportSource, machine_name: str | None) -> list[int]:
        raise UserError(f"{source.path} is {kind}: this jitlab imports pyperf JSON files only so far")

    return load


def _is_pyperf(source: ImportSource) -> bool:
    from jitlab.interop.pyperf import looks_like_pyperf

    return looks_like_pyperf(source.json)


def _is_jitlab_export(source: ImportSource) -> bool:
    return isinstance(source.json, dict) and str(source.json.get("schema", "")).startswith("jitlab.run/")


#: tried in order; the first whose detect() accepts a file imports it
IMPORTERS: list[Importer] = [
    Importer("pyperf", _is_pyperf, _load_pyperf),
    # jitlab stores and `jitlab export --format json` files: their importer goes here, before these
    Importer(
        "jitlab-store", lambda s: s.raw.startswith(SQLITE_HEADER), _not_yet("a SQLite file (a jitlab store?)")
    ),
    Importer("jitlab-export", _is_jitlab_export, _not_yet("a jitlab JSON export")),
]


def importer_for(source: ImportSource) -> Importer:
    for importer in IMPORTERS:
        if importer.detect(source):
            return importer
    raise UserError(f"{source.path}: not a format jitlab imports (pyperf JSON, optionally gzip-compressed)")


@app.command("import")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option(
    "--machine",
    "machine_name",
    default=None,
    metavar="NAME",
    help="name the machine the imported results were measured on (for compare and history)",
)
@store_option
@json_option
def import_command(
    files: tuple[str, ...], machine_name: str | None, store_path: str | None, as_json: bool
) -> None:
    """Import FILEs measured elsewhere (pyperf JSON suites, e.g. from `python -m pyperf timeit -o
    FILE`) into the store, one run per file. A file imported before is skipped."""
    sources = [read_source(Path(f)) for f in files]  # every file is checked before the store changes
    chosen = [(source, importer_for(source)) for source in sources]
    store = Store(store_path)
    store.check_writable()
    imported = []
    for source, importer in chosen:
        earlier = already_imported(store, source.sha256)
        if earlier is not None:
            imported.append(
                {"file": str(source.path), "format": importer.name, "runs": [], "already_run": earlier}
            )
            if not as_json:
                console.print(f"{source.path}: imported before as run {earlier}: skipped", highlight=False)
            continue
        run_ids = importer.load(store, source, machine_name)
        cells = sum(len(store.cells(run_id)) for run_id in run_ids)
        imported.append({"file": str(source.path), "format": importer.name, "runs": run_ids, "cells": cells})
        if not as_json:
            runs = ", ".join(map(str, run_ids))
            console.print(
                f"{source.path}: {importer.name}, {cells} cells, stored as run {runs} in {store.path}",
                highlight=False,
            )
    if as_json:
        new = [run_id for entry in imported for run_id in entry["runs"]]
        machines = [store.run(run_id).machine for run_id in new]
        print(
            json.dumps(
                with_envelope("import", {"store": str(store.path), "imported": imported}, machines=machines)
            )
        )
