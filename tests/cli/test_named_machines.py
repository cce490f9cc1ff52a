"""`--machine NAME` is the machine's name everywhere a machine is shown or grouped by: the run's
metadata, `show`'s tables per machine, the JSON's `machine`/`machines` and each cell's `machine`,
fastest lines and derived tables per machine, `history --machine`, compare's pairing, pyperf exports."""

from __future__ import annotations

import json

import jsonschema
import pyperf
import pytest

from jitlab.schemas import load_schema
from jitlab.store import Store
from jitlab.store.identity import machine_label
from jitlab.store.machine import machine_info

RUN = ["run", "pi", "--backends", "numpy,python", "--sizes", "1e3", "--budget", "0.05", "--threads", "1"]


def validate(document: dict) -> None:
    jsonschema.validate(document, load_schema("run"), cls=jsonschema.Draft202012Validator)


@pytest.fixture(scope="module")
def named_run(tmp_path_factory):
    """Run 1: measured with --machine box-a; box-b's cells added to it as a second node's would be."""
    from jitlab_testing import run_jitlab

    store = tmp_path_factory.mktemp("named") / "s.sqlite"
    done = run_jitlab(*RUN, "--no-plot", "--machine", "box-a", "--store", str(store))
    assert done.returncode == 0, done.stderr
    return store


def test_a_named_run_is_named_everywhere(named_run, jitlab_cli):
    store = str(named_run)
    shown = json.loads(jitlab_cli("show", "1", "--json", "--store", store).stdout)
    validate(shown)
    assert shown["machine"]["name"] == shown["machine"]["fingerprint"] == "box-a"
    assert "machines" not in shown  # one machine: `machine` says it all
    assert {c["machine"] for c in shown["cells"]} == {"box-a"}
    assert "box-a" in jitlab_cli("runs", "--store", store).stdout
    assert " · box-a: " in jitlab_cli("show", "1", "--store", store).stdout  # the header names it
    history = jitlab_cli("history", "pi", "--machine", "box-a", "--json", "--store", store)
    assert history.returncode == 0 and json.loads(history.stdout)["machine"] == "box-a"


@pytest.fixture
def two_machine_run(named_run, tmp_path):
    """A copy of run 1 whose cells were also measured on box-b (twice as slow)."""
    path = tmp_path / "two.sqlite"
    path.write_bytes(named_run.read_bytes())
    store = Store(path)
    other = machine_info(name="box-b")
    for cell in store.cells(1):
        result = {
            "status": "ok",
            "samples_s": [2 * s for s in cell.samples_s],
            "first_call_s": cell.first_call_s,
            "loops": cell.loops,
        }
        store.save_cell(1, cell.workload, cell.backend, cell.size, cell.params, result, machine=other)
    return path


def test_show_groups_a_run_of_two_named_machines(two_machine_run, jitlab_cli, tmp_path):
    store = str(two_machine_run)
    text = jitlab_cli("show", "1", "--store", store)
    assert text.returncode == 0, text.stderr
    assert "pi · on box-a" in text.stdout and "pi · on box-b" in text.stdout
    # who won is decided per machine, never by racing one machine against the other
    assert "fastest · pi on box-a:" in text.stdout and "fastest · pi on box-b:" in text.stdout
    data = json.loads(jitlab_cli("show", "1", "--json", "--store", store).stdout)
    validate(data)
    assert data["machine"]["name"] == "box-a" and set(data["machines"]) == {"box-a", "box-b"}
    assert data["machines"]["box-b"]["name"] == "box-b"
    assert sorted(c["machine"] for c in data["cells"]) == ["box-a", "box-a", "box-b", "box-b"]
    assert sorted(f["machine"] for f in data["fastest"]) == ["box-a", "box-b"]
    exported = json.loads(jitlab_cli("export", "1", "--format", "json", "--store", store).stdout)
    validate(exported)
    assert {c["machine_info"]["name"] for c in exported["cells"]} == {"box-a", "box-b"}
    history = json.loads(jitlab_cli("history", "pi", "--json", "--store", store).stdout)
    assert set(history["machines"]) == {"box-a", "box-b"}
    assert {s["machine"] for s in history["series"]} == {"box-a", "box-b"}


def test_pyperf_export_of_two_machines_round_trips(two_machine_run, jitlab_cli, tmp_path):
    path = tmp_path / "two.json"
    done = jitlab_cli(
        "export", "1", "--format", "pyperf", "-o", str(path), "--store", str(two_machine_run)
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = pyperf.BenchmarkSuite.load(str(path)).get_benchmark_names()
    assert sorted(names) == [
        "pi/numpy/n=1000/on=box-a", "pi/numpy/n=1000/on=box-b",
        "pi/python/n=1000/on=box-a", "pi/python/n=1000/on=box-b",
    ]  # fmt: skip
    copy = tmp_path / "copy.sqlite"
    assert jitlab_cli("import", str(path), "--store", str(copy)).returncode == 0
    original = {(machine_label(c.machine), c.backend): c.samples_s for c in Store(two_machine_run).cells(1)}
    imported = {(machine_label(c.machine), c.backend): c.samples_s for c in Store(copy).cells(1)}
    assert imported == original


def test_compare_of_two_named_machines_needs_across_machines(named_run, jitlab_cli, tmp_path):
    path = tmp_path / "s.sqlite"
    path.write_bytes(named_run.read_bytes())
    done = jitlab_cli(*RUN, "--no-plot", "--store", str(path), env={"JITLAB_MACHINE": "box-c"})
    assert done.returncode == 0, done.stderr
    assert Store(path).run(2).machine["name"] == "box-c"  # $JITLAB_MACHINE names it
    refused = jitlab_cli("compare", "1", "2", "--fail-above", "5", "--store", str(path))
    assert refused.returncode == 2 and "different machines (box-a and box-c)" in refused.stderr
    across = jitlab_cli(
        "compare", "1", "2", "--across-machines", "--fail-above", "100000", "--json", "--store", str(path)
    )  # fmt: skip
    assert across.returncode == 0, across.stderr
    data = json.loads(across.stdout)
    assert data["gate"]["passed"] and set(data["machines"]) == {"box-a", "box-c"}
    assert {c["machine"] for c in data["cells"]} == {"box-a → box-c"}


def test_machine_is_refused_on_a_cluster_and_with_resume(named_run, jitlab_cli):
    on_cluster = jitlab_cli(*RUN, "--machine", "x", "--cluster", "local", "--store", str(named_run))
    assert on_cluster.returncode == 2 and "labels machine=NAME" in on_cluster.stderr
    resumed = jitlab_cli("run", "pi", "--resume", "1", "--machine", "x", "--store", str(named_run))
    assert resumed.returncode == 2 and "--machine" in resumed.stderr
