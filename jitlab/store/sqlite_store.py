"""Former home of the store (schema 1 was SQLite only); kept so existing imports keep working.

The store is now `jitlab.store.database` (SQLite or PostgreSQL through SQLAlchemy Core)."""

from jitlab.store.database import (
    Store,
    cell_from_result,
    now,
    params_key,
    resolve_store_path,
)
from jitlab.store.urls import DEFAULT_STORE

__all__ = [
    "DEFAULT_STORE",
    "Store",
    "cell_from_result",
    "now",
    "params_key",
    "resolve_store_path",
]


def __getattr__(name: str):  # SCHEMA_VERSION lives with the tables, which import SQLAlchemy
    if name == "SCHEMA_VERSION":
        from jitlab.store.schema import SCHEMA_VERSION

        return SCHEMA_VERSION
    raise AttributeError(name)
