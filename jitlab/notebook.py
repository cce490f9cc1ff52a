"""Stored runs in notebooks: `jitlab.load(RUN_ID)` gives a pandas DataFrame of the run's cells (raw
samples on request), and `jitlab.notebook.view(RUN_ID)` displays the run as its tables and figures.

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


def load(run_id: int, store: Store | str | os.PathLike | None = None, samples: bool = False) -> pd.DataFrame:
    """A DataFrame with one row per cell of run `run_id` (statistics derived from the raw samples).

    `store` is a `Store` or a path (default: $JITLAB_STORE or .jitlab/results.sqlite). With
    `samples=True` the raw per-sample times (`samples_s`), dispatch times, per-seed errors and
    values are added as list columns; `df.explode("samples_s")` gives one row per sample.
    """
    pandas = _pandas()
    opened = _open(store)
    opened.run(run_id)  # an unknown id is a UserError
    rows = [_row(cell, samples) for cell in opened.cells(run_id)]
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


def view(run_id: int, store: Store | str | os.PathLike | None = None) -> RunView:
    """The run as an object that notebooks display as its tables and figures."""
    opened = _open(store)
    return RunView(opened.run(run_id), opened.cells(run_id), opened)
