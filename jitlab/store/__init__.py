"""The results store (a SQLite file, or a PostgreSQL database a team shares), its immutable records,
and the machine metadata stored with runs and cells."""

from jitlab.store.database import Store, resolve_store_path
from jitlab.store.records import CellRecord, RunRecord

__all__ = ["CellRecord", "RunRecord", "Store", "resolve_store_path"]
