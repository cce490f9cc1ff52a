"""Stored runs in notebooks: `jitlab.load(RUN_ID)` gives a pandas DataFrame of the run's cells (raw
samples on request), `jitlab.notebook.view(RUN_ID)` displays the run as its tables and figures, and
`jitlab.notebook.compare(RUN_A, RUN_B)` displays a comparison as the report does.

pandas is optional for jitlab (`pip install 'jitlab[notebook]'`); it is imported here only.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from jitlab.errors import UserError
from jitlab.report.export import FLAT_COLUMNS, RAW_COLUMNS, flat_row, raw_fields
from jitlab.store import CellRecord, RunRecord, Store

if TYPE_CHECKING:
    import pandas as pd


def _pandas():
    try:
        import pandas
    except ImportError:
        raise UserError("jitlab.load needs pandas: pip install 'jitlab[notebook]'") from None
    return pandas


def _row(cell: CellRecord, samples: bool) -> dict[str, Any]:
    return {**flat_row(cell), **(raw_fields(cell) if samples else {})}


def _open(store: Store | str | os.PathLike | None) -> Store:
    return store if isinstance(store, Store) else Store(store, create=False)


def load(
    run_id: int | str, store: Store | str | os.PathLike | None = None, samples: bool = False
) -> pd.DataFrame:
    """A DataFrame with one row per cell of run `run_id` (its number, or the start of its UUID),
    statistics derived from the raw samples.

    `store` is a `Store` or a path (default: $JITLAB_STORE or .jitlab/results.sqlite). With
    `samples=True` the raw per-sample times (`samples_s`), dispatch times, per-seed errors and
    values are added as list columns; `df.explode("samples_s")` gives one row per sample.
    """
    pandas = _pandas()
    opened = _open(store)
    number = opened.run(run_id).run_id  # an unknown id is a UserError
    rows = [_row(cell, samples) for cell in opened.cells(number)]
    columns = FLAT_COLUMNS + (RAW_COLUMNS if samples else [])
    return pandas.DataFrame(rows, columns=columns)


class RunView:
    """A stored run for notebooks: displays as the report's run section (tables and figures)."""

    def __init__(self, run: RunRecord, cells: list[CellRecord], store: Store) -> None:
        self.run = run
        self.cells = cells
        self._store = store

    def frame(self, samples: bool = False) -> pd.DataFrame:
        return load(self.run.run_id, self._store, samples)

    def _repr_html_(self) -> str:
        from jitlab.report.html.model import run_view
        from jitlab.report.html.render import environment

        template = environment().get_template("run_view.html.j2")
        return template.render(rv=run_view(self.run, self.cells))

    def __repr__(self) -> str:
        ok = sum(c.ok for c in self.cells)
        return f"<jitlab run {self.run.run_id}: {self.run.target}, {len(self.cells)} cells, {ok} measured>"


def view(run_id: int | str, store: Store | str | os.PathLike | None = None) -> RunView:
    """The run as an object that notebooks display as its tables and figures."""
    opened = _open(store)
    run = opened.run(run_id)
    return RunView(run, opened.cells(run.run_id), opened)


class ComparisonView:
    """Run B against run A for notebooks: displays as the report's comparison section; `.comparison`
    is the `RunComparison` (per-cell ratios, intervals, verdicts) and `.to_json()` its JSON."""

    def __init__(self, run_a: RunRecord, run_b: RunRecord, store: Store, alpha: float, threshold_pct: float):
        from jitlab.compare.runs import compare_cells

        self.run_a = run_a
        self.run_b = run_b
        self._store = store
        self.comparison = compare_cells(
            run_a, run_b, store.cells(run_a.run_id), store.cells(run_b.run_id), alpha, threshold_pct
        )

    def to_json(self) -> dict[str, Any]:
        return self.comparison.to_json()

    def _repr_html_(self) -> str:
        from jitlab.report.html.model import comparison_view
        from jitlab.report.html.render import environment

        a, b = self.run_a.run_id, self.run_b.run_id
        view = comparison_view(self.run_a, self.run_b, self._store.cells(a), self._store.cells(b))
        return environment().get_template("comparison_view.html.j2").render(cv=view)

    def __repr__(self) -> str:
        counts = self.comparison.counts()
        return (
            f"<jitlab comparison of run {self.run_b.run_id} against run {self.run_a.run_id}: "
            f"{counts['slower']} slower, {counts['faster']} faster, {counts['same']} same>"
        )


def compare(
    run_a: int | str,
    run_b: int | str,
    store: Store | str | os.PathLike | None = None,
    alpha: float | None = None,
    threshold_pct: float = 0.0,
) -> ComparisonView:
    """Run `run_b` against `run_a` (the baseline), as `jitlab compare` computes it; displays in notebooks."""
    from jitlab.stats.comparison import DEFAULT_ALPHA

    opened = _open(store)
    return ComparisonView(
        opened.run(run_a), opened.run(run_b), opened, DEFAULT_ALPHA if alpha is None else alpha, threshold_pct
    )
