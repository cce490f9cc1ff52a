"""The results store (a SQLite file, or a PostgreSQL database a team shares), its immutable records,
and the machine metadata stored with runs and cells.

May import: jitlab.stats, jitlab.process_result, jitlab.backends, jitlab.errors, jitlab.secrets,
jitlab.userfiles and this folder (never the engine, compare or the reports: they all read the store, so it sits below them).
"""

from jitlab.store.database import Store, resolve_store_path
from jitlab.store.records import CellRecord, RunRecord

__all__ = ["CellRecord", "RunRecord", "Store", "resolve_store_path"]
