"""`jitlab import FILE_OR_STORE`: runs from another store (SQLite file, PostgreSQL URL, an older
schema) or a `jitlab export --format json` file are merged without duplicates (same UUID, same run)."""

from __future__ import annotations

import hashlib
import json

from schema_v1 import make_v1_store

from jitlab.store import Store

MACHINE = {"hostname": "ci-runner", "cpu": "CI CPU", "cores_logical": 2, "gpus": []}


def fill(store: Store, target: str, cells: int, machine=None) -> int:
    run_id = store.create_run(target, [target], ["python"], None, {"threads": 1}, MACHINE)
    for size in range(1, cells + 1):
        result = {"status": "ok", "samples_s": [size * 1e-3, size * 1.1e-3], "extras": {"s": [1.0, 0.5]}}
        store.save_cell(run_id, target, "python", size, {}, result, machine=machine)
    store.set_run_status(run_id, "finished")
    return run_id


def snapshot(store: Store, run_id: int):
    run = store.run(run_id)
    cells = sorted(
        (c.workload, c.backend, c.size, c.samples_s, tuple(sorted(c.extras)), c.machine.get("hostname"))
        for c in store.cells(run_id)
    )
    return run.uuid, run.created_at, run.status, run.machine, run.options, cells


def test_import_from_stores_and_exports_without_duplicates(store_url, postgres, tmp_path, jitlab_cli):
    # sources: a SQLite store, a PostgreSQL store, an export file and a schema-1 store
    source_file = tmp_path / "ci.sqlite"
    source = Store(source_file)
    a = fill(source, "pi", 3)
    b = fill(source, "dot", 2, machine={"hostname": "gpu-node", "name": "gpu-node"})
    source_pg_url = postgres.create_database()
    source_pg = Store(source_pg_url)
    c = fill(source_pg, "fusion", 4)
    old = tmp_path / "old.sqlite"
    make_v1_store(old)
    old_hash = hashlib.sha256(old.read_bytes()).hexdigest()

    exported = tmp_path / "run.json"
    assert (
        jitlab_cli(
            "export", str(a), "--format", "json", "-o", str(exported), "--store", str(source_file)
        ).returncode
        == 0
    )

    target = Store(store_url)
    mine = fill(target, "local", 1)

    first = jitlab_cli("import", str(source_file), "--store", store_url, "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert [r["source_id"] for r in report["imported"]] == [a, b] and report["skipped"] == []
    local_a, local_b = (r["local_id"] for r in report["imported"])
    assert local_a != mine and snapshot(target, local_a) == snapshot(source, a)
    assert snapshot(target, local_b) == snapshot(source, b)  # each cell keeps its own machine

    again = jitlab_cli("import", str(source_file), "--store", store_url)
    assert again.returncode == 0 and "0 imported, 2 skipped" in again.stdout
    from_export = jitlab_cli("import", str(exported), "--store", store_url)
    assert (
        "0 imported, 1 skipped" in from_export.stdout
        and f"already here as run {local_a}" in from_export.stdout
    )

    from_pg = jitlab_cli("import", source_pg_url, "--store", store_url, "--json")
    (imported,) = json.loads(from_pg.stdout)["imported"]
    assert snapshot(target, imported["local_id"]) == snapshot(source_pg, c)

    from_old = json.loads(jitlab_cli("import", str(old), "--store", store_url, "--json").stdout)
    assert len(from_old["imported"]) == 2
    assert hashlib.sha256(old.read_bytes()).hexdigest() == old_hash  # the source is read, not upgraded
    assert (
        len(json.loads(jitlab_cli("import", str(old), "--store", store_url, "--json").stdout)["imported"])
        == 0
    )
    assert len(target.runs()) == 1 + 2 + 1 + 2


def test_exports_without_uuids_import_once(tmp_path, jitlab_cli):
    source = Store(tmp_path / "a.sqlite")
    run_id = fill(source, "pi", 2)
    path = tmp_path / "old-export.json"
    assert (
        jitlab_cli(
            "export", str(run_id), "--format", "json", "-o", str(path), "--store", str(source.path)
        ).returncode
        == 0
    )
    data = json.loads(path.read_text())
    del data["run"]["uuid"], data["run_uuid"]  # as exports were before runs had UUIDs
    path.write_text(json.dumps(data))
    target = tmp_path / "b.sqlite"
    assert "1 imported, 0 skipped" in jitlab_cli("import", str(path), "--store", str(target)).stdout
    assert "0 imported, 1 skipped" in jitlab_cli("import", str(path), "--store", str(target)).stdout


def test_bad_sources_are_one_line_errors(tmp_path, jitlab_cli):
    not_export = tmp_path / "x.json"
    not_export.write_text('{"run_id": 1, "cells": []}')  # `jitlab run --json`: no raw samples
    for source, needle in [
        (str(tmp_path / "missing.sqlite"), "does not exist"),
        (str(not_export), "not a `jitlab export --format json` file"),
        ("mysql://h/db", "is not supported"),
    ]:
        result = jitlab_cli("import", source, "--store", str(tmp_path / "t.sqlite"))
        assert result.returncode == 2 and needle in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
