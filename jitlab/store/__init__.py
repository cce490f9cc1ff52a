"""The results store (SQLite), its immutable records, and the machine metadata stored with runs."""

from jitlab.store.records import CellRecord, RunRecord
from jitlab.store.sqlite_store import Store, resolve_store_path

__all__ = ["CellRecord", "RunRecord", "Store", "resolve_store_path"]
