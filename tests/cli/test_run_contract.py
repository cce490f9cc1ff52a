"""`jitlab run --json` keeps the documented contract scripts depend on, and the other result commands
read the stored run back."""

import csv
import io
import json
import math

import pytest
from jitlab_testing import DATA

CELL_KEYS = {
    "workload",
    "backend",
    "size",
    "status",
    "reason",
    "first_call_s",
    "median_s",
    "ci95_s",
    "iqr_s",
    "samples",
    "error",
    "dispatch_s",
    "peak_rss_bytes",
}


@pytest.fixture(scope="module")
def pi_run(tmp_path_factory):
    from jitlab_testing import run_jitlab

    store = tmp_path_factory.mktemp("store") / "r.sqlite"
    result = run_jitlab(
        "run",
        "pi",
        "--backends",
        "numpy,python,jax",
        "--sizes",
        "1e3,2e3",
        "--budget",
        "0.2",
        "--store",
        str(store),
        "--json",
        "--threads",
        "1",
    )
    assert result.returncode == 0, result.stderr
    return store, json.loads(result.stdout)


def test_json_contract(pi_run):
    _, data = pi_run
    assert isinstance(data["run_id"], int)
    assert len(data["cells"]) == 6
    for cell in data["cells"]:
        assert CELL_KEYS <= set(cell)
        assert cell["status"] == "ok"
        low, high = cell["ci95_s"]
        assert low <= cell["median_s"] <= high
        assert cell["samples"] >= 1
        assert cell["error"] < 6 * math.sqrt(math.pi * (4 - math.pi) / cell["size"])
        assert (cell["dispatch_s"] is not None) == (cell["backend"] == "jax")
    assert {c["size"] for c in data["cells"]} == {1000, 2000}


def test_show_runs_export_plot_read_the_store(pi_run, jitlab_cli, tmp_path):
    store, data = pi_run
    run_id = str(data["run_id"])
    shown = jitlab_cli("show", run_id, "--store", str(store))
    assert shown.returncode == 0 and "numpy" in shown.stdout and "n=1e3" in shown.stdout
    runs = jitlab_cli("runs", "--store", str(store))
    assert runs.returncode == 0 and "pi" in runs.stdout
    exported = jitlab_cli("export", run_id, "--format", "csv", "--store", str(store))
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert len(rows) == 6 and {r["backend"] for r in rows} == {"numpy", "python", "jax"}
    raw = json.loads(jitlab_cli("export", run_id, "--format", "json", "--store", str(store)).stdout)
    assert all(len(c["samples_s"]) == c["samples"] for c in raw["cells"])
    assert raw["machine"]["cpu"] and raw["schema"] == "jitlab.run/1"
    assert raw["machine"]["backends"]["numpy"]
    png = tmp_path / "fig.png"
    plotted = jitlab_cli("plot", run_id, "-o", str(png), "--store", str(store))
    assert plotted.returncode == 0, plotted.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_user_workload_file_with_inputs_and_reference(jitlab_cli, store):
    result = jitlab_cli(
        "run", str(DATA / "dot_workload.py"), "--budget", "0.1", "--store", str(store), "--json"
    )
    assert result.returncode == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    assert {(c["backend"], c["size"]) for c in cells} == {
        (b, n) for b in ("numpy", "python") for n in (1000, 100000)
    }
    for cell in cells:
        assert cell["status"] == "ok"
        # float32 dot product against a float64 reference: small, nonzero relative error
        assert cell["error"] < 1e-3


def test_default_run_stores_and_plots_beside_the_store(jitlab_cli, tmp_path):
    result = jitlab_cli("run", "pi", "--backends", "numpy", "--sizes", "1e3", "--budget", "0.1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / ".jitlab" / "results.sqlite").exists()
    assert (tmp_path / ".jitlab" / "run-1-pi.png").exists()
    assert "numpy" in result.stdout and "stored as run 1" in result.stdout
