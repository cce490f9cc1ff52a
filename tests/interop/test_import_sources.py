"""One `jitlab import` for every source: jitlab stores and JSON exports (runs keep their UUIDs) and
pyperf files (whose run's UUID comes from the file's content), into one store, each run once."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from jitlab.store import Store


@pytest.fixture(scope="module")
def pyperf_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pyperf") / "timeit.json"
    done = subprocess.run(
        [sys.executable, "-m", "pyperf", "timeit", "--processes", "2", "--values", "2", "--loops", "10",
         "--warmups", "1", "-o", str(path), "sum(range(100))"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture(scope="module")
def jitlab_export(tmp_path_factory):
    from jitlab_testing import run_jitlab

    folder = tmp_path_factory.mktemp("export")
    store = folder / "elsewhere.sqlite"
    done = run_jitlab(
        "run", "pi", "--backends", "numpy", "--sizes", "1e3", "--budget", "0.05", "--threads", "1",
        "--no-plot", "--machine", "ci-box", "--store", str(store),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    path = folder / "run.json"
    done = run_jitlab("export", "1", "--format", "json", "-o", str(path), "--store", str(store))
    assert done.returncode == 0, done.stderr
    return path, Store(store).run(1)


def test_a_pyperf_file_imported_twice_is_imported_once(pyperf_file, jitlab_cli, tmp_path):
    store = tmp_path / "s.sqlite"
    first = jitlab_cli("import", str(pyperf_file), "--machine", "laptop", "--store", str(store), "--json")
    assert first.returncode == 0, first.stderr
    (entry,) = json.loads(first.stdout)["imported"]
    assert entry["format"] == "pyperf" and entry["local_id"] == 1
    # the same content under another name, gzip-compressed, with another --machine: the same run
    packed = tmp_path / "renamed.json.gz"
    packed.write_bytes(gzip.compress(pyperf_file.read_bytes()))
    for again in (
        jitlab_cli("import", str(pyperf_file), "--store", str(store)),
        jitlab_cli("import", str(packed), "--machine", "desktop", "--store", str(store)),
    ):
        assert again.returncode == 0, again.stderr
        assert "0 imported, 1 skipped" in again.stdout and "already here as run 1" in again.stdout
    (run,) = Store(store).runs()
    assert run.uuid == entry["uuid"] and run.machine["name"] == "laptop"
    # a different file is a different run
    changed = tmp_path / "changed.json"
    data = json.loads(pyperf_file.read_text())
    data["metadata"]["description"] = "another measurement"
    changed.write_text(json.dumps(data))
    assert "1 imported, 0 skipped" in jitlab_cli("import", str(changed), "--store", str(store)).stdout


def test_an_export_and_a_pyperf_file_in_one_store(pyperf_file, jitlab_export, jitlab_cli, tmp_path):
    export, original = jitlab_export
    store = tmp_path / "team.sqlite"
    both = jitlab_cli(
        "import", str(export), str(pyperf_file), "--store", str(store), "--json"
    )  # fmt: skip
    assert both.returncode == 0, both.stderr
    data = json.loads(both.stdout)
    assert data["schema"] == "jitlab.import/1" and data["skipped"] == []
    assert [(e["format"], e["local_id"]) for e in data["imported"]] == [("jitlab-export", 1), ("pyperf", 2)]
    assert data["imported"][0]["uuid"] == original.uuid  # a jitlab run keeps its UUID
    assert "ci-box" in data["machines"]
    runs = Store(store).runs()
    assert runs[0].machine == original.machine and runs[0].created_at == original.created_at
    assert [c.machine.get("name") for c in Store(store).cells(1)] == ["ci-box"]
    assert runs[1].target.startswith("pyperf:") and Store(store).cells(2)[0].backend == "pyperf"
    listed = json.loads(jitlab_cli("runs", "--json", "--store", str(store)).stdout)
    assert [r["uuid"] for r in listed["runs"]] == [r.uuid for r in runs]
    again = jitlab_cli("import", str(pyperf_file), str(export), "--store", str(store))
    assert again.returncode == 0 and "0 imported, 2 skipped" in again.stdout, again.stdout
    assert len(Store(store).runs()) == 2


def test_machine_is_refused_for_jitlab_sources_before_anything_is_stored(
    pyperf_file, jitlab_export, jitlab_cli, tmp_path
):
    export, _ = jitlab_export
    store = tmp_path / "s.sqlite"
    refused = jitlab_cli(
        "import", str(pyperf_file), str(export), "--machine", "laptop", "--store", str(store)
    )  # fmt: skip
    assert refused.returncode == 2 and "keep the machines jitlab recorded" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    # a bad source later in the list: the good ones before it are not imported either
    bad = jitlab_cli("import", str(pyperf_file), str(tmp_path / "missing.json"), "--store", str(store))
    assert bad.returncode == 2 and "does not exist" in bad.stderr
    assert not store.exists()
