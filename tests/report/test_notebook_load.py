"""`jitlab.load` gives a DataFrame of a run's cells (raw samples on request); a run displays in a
notebook as its tables and figures."""

import numpy as np
import pandas as pd
import pytest

import jitlab
from jitlab.errors import UserError
from jitlab.notebook import RunView, view
from jitlab.store import Store
from jitlab.store.machine import machine_info


@pytest.fixture
def run(store):
    s = Store(store)
    run_id = s.create_run("pi", ["pi"], ["numpy"], [100, 1000], {}, machine_info())
    s.save_cell(
        run_id,
        "pi",
        "numpy",
        100,
        {},
        {"status": "ok", "samples_s": [3e-6, 1e-6, 2e-6], "errors": [0.1, 0.2]},
    )
    s.save_cell(
        run_id,
        "pi",
        "numpy",
        1000,
        {"k": 2},
        {"status": "ok", "samples_s": list(np.linspace(1, 2, 11) * 1e-5)},
    )
    s.save_cell(run_id, "<b>pi</b>", "jax", 100, {}, {"status": "failed", "reason": "<oops>"})
    return store, run_id


def test_load_returns_one_row_per_cell(run):
    store, run_id = run
    df = jitlab.load(run_id, store=store)
    assert isinstance(df, pd.DataFrame) and len(df) == 3
    row = df[(df.backend == "numpy") & (df["size"] == 100)].iloc[0]
    assert row.median_s == pytest.approx(2e-6) and row.samples == 3 and row.min_s == pytest.approx(1e-6)
    assert row.error == pytest.approx(np.sqrt((0.01 + 0.04) / 2))
    assert df[df["size"] == 1000].iloc[0].params == {"k": 2}
    failed = df[df.status == "failed"].iloc[0]
    assert failed.reason == "<oops>" and pd.isna(failed.median_s)
    assert "samples_s" not in df.columns


def test_load_with_samples_gives_the_raw_times(run):
    store, run_id = run
    df = jitlab.load(run_id, store=Store(store), samples=True)
    first = df[(df.backend == "numpy") & (df["size"] == 100)].iloc[0]
    assert first.samples_s == [3e-6, 1e-6, 2e-6]
    assert df.explode("samples_s").dropna(subset=["samples_s"]).shape[0] == 3 + 11


def test_run_view_displays_tables_and_plots_escaped(run):
    store, run_id = run
    shown = view(run_id, store)
    assert isinstance(shown, RunView) and "3 cells" in repr(shown)
    html = shown._repr_html_()
    assert "<svg" in html and '<table class="cells">' in html
    assert "<b>pi</b>" not in html and "&lt;b&gt;pi&lt;/b&gt;" in html and "&lt;oops&gt;" in html
    assert len(shown.frame()) == 3


def test_unknown_run_is_a_user_error(run):
    store, _ = run
    with pytest.raises(UserError, match="no run 9"):
        jitlab.load(9, store=store)
    with pytest.raises(UserError, match="no results store"):
        jitlab.load(1, store=store.parent / "missing.sqlite")
