"""Comparing cells measured in several worker processes: two identical runs whose processes are
offset from each other (as real processes are) are never called different; a 5% change is; every
verdict says why; a store written before processes existed is still read and compared."""

import json
import sqlite3

import numpy as np
import pytest

from jitlab.cli import main
from jitlab.compare import compare_runs, compare_samples
from jitlab.stats.comparison import ONE_PROCESS_FLOOR, segment_floor
from jitlab.store import Store
from jitlab.store.machine import machine_info

MACHINE = machine_info()


def cell_samples(rng, median, processes=3, per_process=40, between=0.003, within=0.01):
    """Samples and their process indices: each process offset by a normal draw of sd `between`."""
    offsets = rng.normal(0.0, between, processes)
    samples = np.concatenate([median * np.exp(o + rng.normal(0.0, within, per_process)) for o in offsets])
    return samples, np.repeat(np.arange(processes), per_process)


def test_identical_runs_with_process_offsets_are_never_called_different():
    """The reporter's situation: every run's processes differ by a fraction of a percent, and the
    samples within a process are tight, so pooled samples look 'significantly' different."""
    rng = np.random.default_rng(0)
    flat_calls = 0
    for _ in range(100):
        a, pa = cell_samples(rng, 2e-3)
        b, pb = cell_samples(rng, 2e-3)
        result = compare_samples(a, b, process_a=pa, process_b=pb)
        assert result.verdict == "same", result.reason
        assert result.processes_a == result.processes_b == 3
        assert result.margin_kind == "noise floor"
        flat_calls += compare_samples(a, b, threshold=0.0).significant  # as if one process each
    assert flat_calls > 10  # ignoring processes calls many identical pairs different (alpha: ~1)


@pytest.mark.parametrize("seed", range(10))
def test_a_five_percent_slower_build_is_called_slower(seed):
    rng = np.random.default_rng(100 + seed)
    a, pa = cell_samples(rng, 2e-3)
    b, pb = cell_samples(rng, 2e-3 * 1.05)
    result = compare_samples(a, b, process_a=pa, process_b=pb)
    assert result.verdict == "slower", result.reason
    assert result.ci_low > 1 + result.margin
    assert result.reason.startswith("called: slower +")
    assert f"outside noise floor ±{result.margin:.1%}" in result.reason
    faster = compare_samples(b, a, process_a=pb, process_b=pa)
    assert faster.verdict == "faster"


def test_the_margin_is_the_most_straying_process_however_many_processes():
    """Two runs of the same code differ by about as much as one run's processes do (they are spread
    over its duration and see the machine's speed change, as runs minutes apart do): the margin is
    the noise floor itself, which does not narrow with more processes. On the 2-core VM a standard
    error as the margin called identical runs of 15-40 processes different in 5 of 10 pairs."""
    rng = np.random.default_rng(48)
    vm = {"between": 0.037, "within": 0.005, "per_process": 12}
    for processes in (3, 30):
        a, pa = cell_samples(rng, 8e-3, processes=processes, **vm)
        b, pb = cell_samples(rng, 8e-3 * 1.03, processes=processes, **vm)
        result = compare_samples(a, b, process_a=pa, process_b=pb)
        assert result.margin == pytest.approx(max(result.noise_floor_a, result.noise_floor_b))
        assert result.margin > 0.03 and result.verdict != "slower", result.reason


def test_reasons_name_significance_the_noise_floor_and_the_threshold():
    rng = np.random.default_rng(7)
    a, pa = cell_samples(rng, 1.0, between=0.0, within=0.002, per_process=200)
    # processes of B that disagree by 2-3%: a 1% change cannot be told from that
    b = np.concatenate([a[pa == 0] * 1.004, a[pa == 1] * 0.99, a[pa == 2] * 1.03])
    unclear = compare_samples(a, b, process_a=pa, process_b=pa)
    assert unclear.verdict == "same"
    assert unclear.noise_floor_b == pytest.approx(0.026, abs=0.005)
    noisy = compare_samples(a, a * rng.lognormal(0, 0.3, a.size), process_a=pa, process_b=pa)
    assert noisy.reason.startswith("not significant: p=")
    explicit = compare_samples(a, a * 1.03, process_a=pa, process_b=pa, threshold=0.05)
    assert explicit.verdict == "same" and "threshold ±5.0%" in explicit.reason


def test_one_process_cells_never_claim_less_than_the_one_process_floor():
    rng = np.random.default_rng(8)
    a = rng.lognormal(0, 0.001, 300)
    b = a * 1.03  # significant, but 3%: one process cannot show it is more than another process's spread
    result = compare_samples(a, b)
    assert result.verdict == "undecided" and result.margin == ONE_PROCESS_FLOOR
    assert "one-process floor ±5.0%" in result.reason
    assert compare_samples(a, a * 1.08).verdict == "slower"


def test_a_one_process_side_whose_segments_disagree_gets_their_spread_as_its_floor():
    """The thirds of one process's sampling (in the order taken) drifting apart by 12% make a floor
    of about 12%: a 10% change is not called."""
    rng = np.random.default_rng(11)
    drifting = np.concatenate([rng.lognormal(np.log(f), 0.002, 40) for f in (1.0, 1.06, 1.12)])
    assert segment_floor(drifting) == pytest.approx(0.056, abs=0.01)
    steady = rng.lognormal(0, 0.002, 120)
    result = compare_samples(drifting, steady * 1.2)
    assert result.margin == pytest.approx(0.056, abs=0.01) and result.verdict == "slower"
    assert compare_samples(drifting, steady * 1.1).verdict == "undecided"
    assert segment_floor(steady[:8]) is None


def test_one_process_against_several_uses_both_uncertainties():
    rng = np.random.default_rng(9)
    a, pa = cell_samples(rng, 1.0)
    b = rng.lognormal(np.log(1.05), 0.01, 120)
    result = compare_samples(a, b, process_a=pa)
    assert (result.processes_a, result.processes_b) == (3, 1)
    assert result.margin_kind == "one-process floor"
    b = rng.lognormal(np.log(1.1), 0.01, 120)
    assert compare_samples(a, b, process_a=pa).verdict == "slower"


def synthetic_run(store, factor, seed):
    rng = np.random.default_rng(seed)
    run_id = store.create_run("busy", ["busy"], ["python"], [1], {}, MACHINE)
    samples, index = cell_samples(rng, 2e-3 * factor)
    store.save_cell(
        run_id,
        "busy",
        "python",
        1,
        {},
        {"status": "ok", "samples_s": list(samples), "sample_process": [int(i) for i in index]},
    )
    store.set_run_status(run_id, "finished")
    return run_id


def test_compare_json_says_why_and_the_gate_follows_the_noise_floor(store, capsys):
    s = Store(store)
    base, same, slower = synthetic_run(s, 1.0, 1), synthetic_run(s, 1.0, 2), synthetic_run(s, 1.05, 3)
    assert main(["compare", str(base), str(same), "--store", str(store), "--json"]) == 0
    cell = json.loads(capsys.readouterr().out)["cells"][0]
    assert cell["verdict"] == "same" and cell["processes"] == [3, 3]
    assert all(f is not None for f in cell["noise_floor"])
    assert cell["margin"]["kind"] == "noise floor"
    assert cell["reason"].startswith(("within noise floor", "not significant"))
    assert main(["compare", str(base), str(slower), "--store", str(store), "--json"]) == 0
    cell = json.loads(capsys.readouterr().out)["cells"][0]
    assert cell["verdict"] == "slower" and cell["reason"].startswith("called: slower")
    comparison = compare_runs(s, base, slower)
    assert comparison.cells[0].stats.verdict == "slower"
    from jitlab.compare import check_regressions

    assert len(check_regressions(s, base, slower, fail_above_pct=2)) == 1
    assert check_regressions(s, base, same, fail_above_pct=0) == []
    assert main(["compare", str(base), str(slower), "--store", str(store)]) == 0
    assert "noise floor" in capsys.readouterr().out


SCHEMA_1_CELLS = """CREATE TABLE cells (
    run_id INTEGER NOT NULL REFERENCES runs(id), workload TEXT NOT NULL, backend TEXT NOT NULL,
    size INTEGER NOT NULL, params TEXT NOT NULL, status TEXT NOT NULL, reason TEXT, first_call_s REAL,
    samples_s TEXT NOT NULL, dispatch_samples_s TEXT NOT NULL, loops INTEGER, vals TEXT NOT NULL,
    errors TEXT NOT NULL, extras TEXT NOT NULL, expected_error REAL, warnings TEXT NOT NULL,
    peak_rss_bytes INTEGER, peak_device_bytes INTEGER, device TEXT, backend_version TEXT, threads INTEGER,
    finished_at TEXT NOT NULL, log TEXT, PRIMARY KEY (run_id, workload, backend, size, params))"""


def schema_1_store(path):
    """A store as jitlab wrote it before cells had processes."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL, finished_at TEXT,"
            " status TEXT NOT NULL, target TEXT NOT NULL, workloads TEXT NOT NULL, backends TEXT NOT NULL,"
            " sizes TEXT, options TEXT NOT NULL, machine TEXT NOT NULL)"
        )
        conn.execute(SCHEMA_1_CELLS)
        conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        for run_id, factor in ((1, 1.0), (2, 1.1)):
            conn.execute(
                "INSERT INTO runs VALUES (?, '2026-01-01', '2026-01-01', 'finished', 'pi', ?, '[]',"
                " NULL, '{}', ?)",
                (run_id, '["pi"]', json.dumps(MACHINE)),
            )
            samples = list(np.random.default_rng(run_id).lognormal(np.log(1e-3 * factor), 0.02, 40))
            conn.execute(
                "INSERT INTO cells VALUES (?, 'pi', 'numpy', 1000, '{}', 'ok', NULL, 0.1, ?, '[]', 10,"
                " '[]', '[]', '{}', NULL, '[]', NULL, NULL, 'cpu', '2.0', 1, '2026-01-01', NULL)",
                (run_id, json.dumps(samples)),
            )


def test_a_store_from_before_processes_is_read_as_one_process_and_upgraded(store):
    schema_1_store(store)
    s = Store(store)
    cell = s.cells(1)[0]
    assert cell.processes == 1 and cell.sample_process == () and cell.noise_floor is None
    comparison = compare_runs(s, 1, 2)
    stats = comparison.cells[0].stats
    assert stats.margin_kind == "one-process floor"
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "2"
        assert "processes" in {r[1] for r in conn.execute("PRAGMA table_info(cells)")}
    # new cells with processes go into the upgraded store
    run = s.create_run("pi", ["pi"], ["numpy"], [1000], {}, MACHINE)
    saved = s.save_cell(
        run, "pi", "numpy", 1000, {}, {"status": "ok", "samples_s": [1.0, 2.0], "sample_process": [0, 1]}
    )
    assert s.cells(run)[0].sample_process == saved.sample_process == (0, 1)


def test_a_schema_2_store_without_the_processes_column_gets_it(store):
    """A store written by jitlab before cells recorded their processes (same schema version, one
    column fewer): opening it adds the column, and its cells read as one process."""
    s = Store(store)
    run = s.create_run("pi", ["pi"], ["numpy"], [1000], {}, MACHINE)
    s.save_cell(run, "pi", "numpy", 1000, {}, {"status": "ok", "samples_s": [1.0, 1.1, 1.2]})
    s.close()
    with sqlite3.connect(store) as conn:
        conn.execute("ALTER TABLE cells DROP COLUMN processes")
    cell = Store(store).cells(run)[0]
    assert cell.processes == 1 and cell.sample_process == () and cell.samples_s == (1.0, 1.1, 1.2)
    with sqlite3.connect(store) as conn:
        assert "processes" in {r[1] for r in conn.execute("PRAGMA table_info(cells)")}


def test_a_backend_with_one_process_and_multi_process_cells_gets_a_geometric_mean(store):
    """Cells of one backend measured with several processes and with one (a slow size) mix."""
    s = Store(store)
    runs = []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        run_id = s.create_run("busy", ["busy"], ["python"], [1, 2], {}, MACHINE)
        samples, index = cell_samples(rng, 1e-3)
        s.save_cell(
            run_id, "busy", "python", 1, {},
            {"status": "ok", "samples_s": list(samples), "sample_process": [int(i) for i in index]},
        )  # fmt: skip
        s.save_cell(
            run_id, "busy", "python", 2, {}, {"status": "ok", "samples_s": list(rng.lognormal(0, 0.01, 9))}
        )
        runs.append(run_id)
    comparison = compare_runs(s, *runs)
    assert comparison.geomeans["python"].cells == 2
    kinds = sorted(c.stats.margin_kind for c in comparison.cells)
    assert kinds == ["noise floor", "one-process floor"]
