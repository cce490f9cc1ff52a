"""What a worker records of the machine's load, and how a process measured in a slow spell is marked
and, once measured again, left out of its cell's figures."""

from __future__ import annotations

from jitlab.engine.load import Load, load_between, snapshot
from jitlab.engine.processes import merge_process_results
from jitlab.engine.slow_spells import SLOW_WARNING, SpellWatch
from jitlab.process_result import CellResult, ProcessResult


def test_a_load_is_read_from_proc_and_survives_json():
    before = snapshot()
    total = sum(i * i for i in range(200_000))
    load = load_between(before, snapshot())
    assert total > 0 and load.seconds > 0 and load.cpus >= 1
    assert load.wait_share is not None and 0.0 <= load.wait_share <= 1.0
    assert load.cpu_share is not None and load.cpu_share > 0
    assert Load.from_json(load.to_json()) == load
    assert Load.from_json(None) is None and Load.from_json({"seconds": "x"}) is None


def test_busy_means_waiting_for_a_cpu_or_losing_it_to_the_hypervisor():
    assert not Load(1.0, 0.01, 0.0, 0.99, 0.4, 2).busy
    assert Load(1.0, 0.4, 0.0, 0.6, 4.1, 2).busy
    assert Load(1.0, 0.0, 0.2, 0.8, 1.0, 2).busy
    assert Load(1.0, 0.4, 0.0, 0.6, 4.1, 2).phrase() == "waited 40% of its time for a CPU, load 4.1 on 2 CPUs"


def result(samples, wait=0.0, canary=0.034, **extra):
    return ProcessResult.from_dict({"status": "ok", "samples_s": samples, "cpu_samples_s": samples,
            "load": Load(1.0, wait, 0.0, 1 - wait, 1.0, 2).to_json(),
            "canary": {"t": 0.0, "python_s": canary, "numpy_s": 0.0015}, **extra})  # fmt: skip


def test_slow_spells_are_marked_by_the_load_or_the_canary():
    watch = SpellWatch()
    quiet, busy, slow = (
        watch.mark(r, "") for r in (result([1.0]), result([1.5], wait=0.4), result([1.3], canary=0.050))
    )
    assert quiet.slow_spell is None
    assert "waited 40% of its time for a CPU" in busy.slow_spell
    assert "drift canary ran 47% slower than the run's fastest" in slow.slow_spell


def test_a_process_measured_again_replaces_the_slow_one_and_the_cell_says_so():
    first = result([1e-3] * 10)
    slow = result(
        [1.5e-3] * 10, wait=0.4, slow_spell="the process waited 40% of its time for a CPU", replaced_by=2
    )
    again = result([1.01e-3] * 10)
    merged = merge_process_results([first, slow, again], requested=2)
    assert merged.sample_process == (0,) * 10 + (2,) * 10  # the slow process is left out
    assert max(merged.samples_s) < 1.1e-3 and len(merged.cpu_samples_s) == 20
    (warning,) = [w for w in merged.warnings if w.startswith(SLOW_WARNING)]
    assert "process 1 ran while the machine was busy" in warning and "which replaces it" in warning
    kept = result([1.5e-3] * 10, wait=0.4, slow_spell="the process waited 40% of its time for a CPU",
                  again="the machine stayed busy")  # fmt: skip
    merged = merge_process_results([first, kept], requested=2)
    assert any("not measured again on a quiet machine: the machine stayed busy" in w for w in merged.warnings)
    assert merged.process_details[1]["load"]["wait_share"] == 0.4


def test_cpu_time_counts_and_load_survive_the_store_an_export_and_an_import(tmp_path):
    from jitlab_testing import run_jitlab

    from jitlab.store import Store

    machine = {"cpu": "test", "cores_logical": 2, "memory_bytes": 1, "os": "x", "python": "3", "gpus": [],
               "backends": {}}  # fmt: skip
    store = Store(tmp_path / "a.sqlite")
    run = store.create_run("w", ["w"], ["python", "numpy"], [1], {}, machine)
    first = result([1e-3, 1.1e-3, 1.2e-3], wait=0.3)
    timed = CellResult.of_process(
        first, sample_process=(0, 0, 1), process_details=({"process": 0, "load": first.load},)
    )
    counted = CellResult(status="ok", instructions=(8.7e6, 8.7e6 + 3), instruction_process=(0, 1))
    store.save_cell(run, "w", "python", 1, {}, timed)
    store.save_cell(run, "w", "numpy", 1, {}, counted)
    store.close()
    cells = {c.backend: c for c in Store(tmp_path / "a.sqlite").cells(run)}
    assert (
        cells["python"].cpu_samples_s == (1e-3, 1.1e-3, 1.2e-3)
        and cells["python"].load_json()["wait_share"] == 0.3
    )
    assert (
        cells["numpy"].measure == "instructions" and cells["numpy"].instruction_summary.median == 8.7e6 + 1.5
    )
    exported = tmp_path / "run.json"
    assert (
        run_jitlab(
            "export", "1", "--store", str(tmp_path / "a.sqlite"), "--format", "json", "-o", str(exported)
        ).returncode
        == 0
    )
    assert run_jitlab("import", str(exported), "--store", str(tmp_path / "b.sqlite")).returncode == 0
    again = {c.backend: c for c in Store(tmp_path / "b.sqlite").cells(1)}
    assert again["python"].cpu_samples_s == cells["python"].cpu_samples_s
    assert again["numpy"].instructions == cells["numpy"].instructions
    assert again["numpy"].instruction_process == (0, 1)
