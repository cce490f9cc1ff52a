"""What makes "the same machine": a user's name for it, else its hardware and frequency settings, never
its hostname (CI runners get a new one per job)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jitlab.cli import main
from jitlab.compare.runs import compare_runs
from jitlab.errors import UserError
from jitlab.history.series import load_history
from jitlab.store import Store
from jitlab.store.machine import frequency_settings, machine_fingerprint, machine_info

BOX = {
    "hostname": "runner-1234",
    "cpu": "Example CPU 9000",
    "cores_logical": 16,
    "memory_bytes": 64 * 2**30 - 5 * 2**20,
    "gpus": ["NVIDIA H100 80GB HBM3, 81559 MiB, 580.65.06"],
    "cpu_governor": "performance",
    "turbo": "off",
}


def test_hostname_and_gpu_driver_do_not_make_another_machine():
    other_job = {**BOX, "hostname": "runner-5678", "gpus": ["NVIDIA H100 80GB HBM3, 81559 MiB, 590.10"]}
    assert machine_fingerprint(other_job) == machine_fingerprint(BOX)
    assert machine_fingerprint(BOX) == (
        "Example CPU 9000 · 16 threads · 64 GiB · NVIDIA H100 80GB HBM3 · governor performance · turbo off"
    )


H100_DETAILS = {
    "index": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "compute_cap": "9.0",
    "pci_bus_id": "00000000:19:00.0",
}


def test_gpu_details_give_the_model_not_the_driver_or_cuda_versions():
    detailed = {
        **BOX,
        "gpu_details": [{**H100_DETAILS, "driver": "580.65.06", "cuda_driver_version": "13.0"}],
    }
    updated = {
        **detailed,
        "gpus": ["NVIDIA H100 80GB HBM3, 81559 MiB, 590.10"],
        "gpu_details": [{**H100_DETAILS, "driver": "590.10", "cuda_driver_version": "13.1"}],
    }
    assert machine_fingerprint(detailed) == machine_fingerprint(updated) == machine_fingerprint(BOX)
    # without nvidia-smi the GPUs are known from NVML's details only: the same model, the same machine
    nvml_only = {**detailed, "gpus": []}
    assert machine_fingerprint(nvml_only) == machine_fingerprint(BOX)
    other_model = {**nvml_only, "gpu_details": [{**H100_DETAILS, "name": "NVIDIA H200"}]}
    assert "NVIDIA H200" in machine_fingerprint(other_model) and "580" not in machine_fingerprint(other_model)


def test_hardware_and_frequency_settings_do():
    for change in (
        {"cpu": "Other CPU"},
        {"cores_logical": 8},
        {"gpus": []},
        {"cpu_governor": "powersave"},
        {"turbo": "on"},
    ):
        assert machine_fingerprint({**BOX, **change}) != machine_fingerprint(BOX), change


def test_a_name_overrides_the_fingerprint(monkeypatch):
    assert machine_fingerprint({**BOX, "name": "ci-large"}) == "ci-large"
    assert machine_fingerprint({**BOX, "cpu": "Other CPU", "name": "ci-large"}) == "ci-large"
    monkeypatch.setenv("JITLAB_MACHINE", "from-env")
    assert machine_info()["name"] == "from-env"
    assert machine_info(name="from-option")["name"] == "from-option"  # the option wins
    monkeypatch.delenv("JITLAB_MACHINE")
    assert machine_info()["name"] is None


def test_frequency_settings_read_from_sysfs(tmp_path):
    assert frequency_settings(tmp_path) == {"cpu_governor": None, "turbo": None}  # nothing readable
    for cpu in ("cpu0", "cpu1"):
        (tmp_path / cpu / "cpufreq").mkdir(parents=True)
        (tmp_path / cpu / "cpufreq" / "scaling_governor").write_text("performance\n")
    (tmp_path / "intel_pstate").mkdir()
    (tmp_path / "intel_pstate" / "no_turbo").write_text("1\n")
    assert frequency_settings(tmp_path) == {"cpu_governor": "performance", "turbo": "off"}
    (tmp_path / "cpu1" / "cpufreq" / "scaling_governor").write_text("powersave\n")
    (tmp_path / "intel_pstate" / "no_turbo").unlink()
    (tmp_path / "cpufreq").mkdir()
    (tmp_path / "cpufreq" / "boost").write_text("1\n")
    assert frequency_settings(tmp_path) == {"cpu_governor": "performance,powersave", "turbo": "on"}


def store_with_runs(path, machines) -> Store:
    store = Store(path)
    rng = np.random.default_rng(0)
    for machine in machines:
        run_id = store.create_run("pi", ["pi"], ["numpy"], [1000], {}, machine)
        samples = list(1e-3 * rng.lognormal(0, 0.01, 20))
        store.save_cell(run_id, "pi", "numpy", 1000, {}, {"status": "ok", "samples_s": samples})
        store.set_run_status(run_id, "finished")
    return store


def test_ci_jobs_with_new_hostnames_are_one_machine_for_compare_and_history(tmp_path):
    jobs = [{**BOX, "hostname": f"runner-{i}"} for i in range(3)]
    store = store_with_runs(tmp_path / "s.sqlite", jobs)
    assert compare_runs(store, 1, 2).same_machine
    history = load_history(store, "pi")
    assert history.other_machine_runs == () and len(history.series[0].points) == 3


def test_named_machines_select_history(tmp_path, capsys):
    machines = [{**BOX, "name": "box-a"}, {**BOX, "name": "box-b"}, {**BOX, "name": "box-a"}]
    store = store_with_runs(tmp_path / "s.sqlite", machines)
    with pytest.raises(UserError, match="different machines"):  # box-a and box-b: refused
        compare_runs(store, 1, 2)
    assert not compare_runs(store, 1, 2, across_machines=True).same_machine
    assert compare_runs(store, 1, 3).same_machine
    assert main(["history", "pi", "--machine", "box-b", "--json", "--store", str(store.path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["run_id"] for p in data["series"][0]["points"]] == [2] and data["runs_on_other_machines"] == [
        1,
        3,
    ]
    assert main(["history", "pi", "--machine", "box-c", "--store", str(store.path)]) == 2
    assert "machines are box-a, box-b" in capsys.readouterr().err


def test_run_machine_option_is_stored(jitlab_cli, store):
    result = jitlab_cli(
        "run", "pi", "--backends", "numpy", "--sizes", "1e3", "--budget", "0.05", "--no-plot",
        "--machine", "ci-large", "--store", str(store), env={"JITLAB_MACHINE": "ignored-by-the-option"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (run,) = Store(store).runs()
    assert run.machine["name"] == "ci-large" and machine_fingerprint(run.machine) == "ci-large"
    assert "ci-large" in jitlab_cli("runs", "--store", str(store)).stdout
