"""Every `--json` output carries its envelope (schema, jitlab version, machine, options), and the run
document validates against the JSON Schema shipped in jitlab/schemas."""

from __future__ import annotations

import json

import jsonschema
import pytest
from jitlab_testing import DATA

import jitlab
from jitlab.schemas import load_schema

MIXED = str(DATA / "mixed_workload.py")


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    from jitlab_testing import run_jitlab

    store = tmp_path_factory.mktemp("schema") / "r.sqlite"
    result = run_jitlab(
        "run",
        MIXED,
        "--backends",
        "python,numpy,numba,triton",
        "--timeout",
        "5",
        "--budget",
        "0.05",
        "--threads",
        "1",
        "--no-plot",
        "--json",
        "--machine",
        "schema-test-box",
        "--store",
        str(store),
        env={"MIXED_HANG_S": "60"},
    )
    assert result.returncode == 0, result.stderr
    return store, json.loads(result.stdout)


def validate(document: dict) -> None:
    jsonschema.validate(document, load_schema("run"), cls=jsonschema.Draft202012Validator)


def test_the_schema_is_valid_and_shipped_as_package_data():
    jsonschema.Draft202012Validator.check_schema(load_schema("run"))


def test_run_json_validates_and_carries_its_envelope(mixed_run):
    _, data = mixed_run
    validate(data)
    assert data["schema"] == "jitlab.run/1" and data["jitlab_version"] == jitlab.__version__
    assert data["machine"]["name"] == data["machine"]["fingerprint"] == "schema-test-box"
    assert data["options"]["budget"] == 0.05 and data["options"]["backends"] == "python,numpy,numba,triton"
    assert data["summary"] == {
        "cells": 16,
        "ok": 8,
        "failed": 3,
        "timeout": 1,
        "unavailable": 4,
        "inconsistent": 0,
    }
    # each cell says where it ran and how it was timed (CUDA events only for work on a CUDA device)
    for c in data["cells"]:
        if c["status"] == "ok":
            assert c["device"] and c["timing_method"] in ("host clock", "cuda events")
            if c["backend"] in ("python", "numpy", "numba"):
                assert c["device"] == "cpu" and c["timing_method"] == "host clock"
    assert isinstance(data["machine"]["gpu_details"], list)
    # the speed-up table against python (variant=loop) and the declared rates, as plain data
    (derived,) = data["derived"]
    assert derived["workload"] == "mixed" and len(derived["speedups"]) == 8 and len(derived["rates"]) == 8
    for row in derived["speedups"]:  # per round with its interval, or the ratio of medians (one process)
        if row["speedup_method"] == "medians":
            assert row["speedup"] == pytest.approx(row["baseline"]["median_s"] / row["median_s"])
            assert row["speedup_ci95"] is None
        else:
            assert row["rounds"] >= 2 and row["speedup_ci95"][0] <= row["speedup"] <= row["speedup_ci95"][1]
    for row in derived["rates"]:
        assert row["ops_per_s"] == pytest.approx(row["size"] / row["median_s"])
    # one winner per size among the cells compared with the same baseline, against NumPy when it ran
    assert sorted(f["size"] for f in data["fastest"]) == [100, 1000]
    for f in data["fastest"]:
        ok = [c for c in data["cells"] if c["status"] == "ok" and c["size"] == f["size"]]
        assert f["median_s"] == min(c["median_s"] for c in ok)
        if f["backend"] != "numpy":
            assert f["reference"]["kind"] == "numpy" and f["ratio"] >= 1


def test_show_and_export_validate_too(mixed_run, jitlab_cli):
    store, data = mixed_run
    shown = jitlab_cli("show", str(data["run_id"]), "--json", "--store", str(store))
    validate(json.loads(shown.stdout))
    exported = json.loads(
        jitlab_cli("export", str(data["run_id"]), "--format", "json", "--store", str(store)).stdout
    )
    validate(exported)
    assert all(len(c["samples_s"]) == c["samples"] for c in exported["cells"])


def test_a_document_missing_a_required_field_is_rejected(mixed_run):
    _, data = mixed_run
    broken = {**data, "cells": [{k: v for k, v in data["cells"][0].items() if k != "median_s"}]}
    with pytest.raises(jsonschema.ValidationError, match="median_s"):
        validate(broken)
    with pytest.raises(jsonschema.ValidationError):
        validate({**data, "schema": "jitlab.run/2"})


def test_runs_compare_history_backends_carry_the_envelope(mixed_run, jitlab_cli):
    store, data = mixed_run
    runs = json.loads(jitlab_cli("runs", "--json", "--store", str(store)).stdout)
    assert runs["schema"] == "jitlab.runs/1" and list(runs["machines"]) == ["schema-test-box"]
    (entry,) = runs["runs"]
    assert entry["run_id"] == data["run_id"] and entry["machine"] == "schema-test-box"
    assert entry["summary"]["timeout"] == 1 and entry["target"] == MIXED
    compared = json.loads(jitlab_cli("compare", "1", "1", "--json", "--store", str(store)).stdout)
    # run ids are given as typed: a number or the start of a UUID
    assert compared["schema"] == "jitlab.compare/1" and compared["options"]["run_a"] == "1"
    assert list(compared["machines"]) == ["schema-test-box"]
    assert {c["machine"] for c in compared["cells"]} == {"schema-test-box"}
    history = json.loads(jitlab_cli("history", "mixed", "--json", "--store", str(store)).stdout)
    assert history["schema"] == "jitlab.history/1" and history["machine"] == "schema-test-box"
    backends = json.loads(jitlab_cli("backends", "--json").stdout)
    assert backends["schema"] == "jitlab.backends/1" and backends["machine"]["fingerprint"]
