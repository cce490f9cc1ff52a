"""What a `--store` argument (or $JITLAB_STORE) names: a SQLite file or a PostgreSQL database.

A value that looks like a URL is never taken as a file name: `postgresql://user@host/db` once
became a SQLite file under `./postgresql:/user@host/db`. A scheme jitlab does not support is an
error naming the forms it does. Passwords never leave this module unmasked in anything meant for
people (`display`), and the password of every server URL parsed is remembered as a secret to mask
wherever else it might appear (`jitlab.secrets`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from jitlab.errors import UserError
from jitlab.secrets import mask_text, remember_url

DEFAULT_STORE = Path(".jitlab") / "results.sqlite"
#: folder for plots and caches when the store is a database server (nothing local to sit beside)
LOCAL_FOLDER = Path(".jitlab")
# written so that the masking of URL passwords (jitlab.secrets) leaves it whole: a placeholder such
# as USER[:PASSWORD]@HOST reads as a user and a password, and came out as "USER[:***@HOST"
POSTGRES_FORM = "postgresql://USER@HOST[:PORT]/DATABASE (a password: in PGPASSWORD, or as USER:PASSWORD@HOST)"
SUPPORTED_FORMS = f"a file path, sqlite:///PATH, or {POSTGRES_FORM}"
POSTGRES_SCHEMES = {"postgresql", "postgres", "postgresql+psycopg"}
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://")


@dataclass(frozen=True)
class StoreLocation:
    """Where a store lives. `url` is for SQLAlchemy (may hold a password); `display` is for people."""

    kind: str  # "sqlite" | "postgresql"
    url: str
    display: str
    #: the SQLite file; None for a database server
    path: Path | None = None

    @property
    def is_server(self) -> bool:
        return self.kind != "sqlite"

    @property
    def local_folder(self) -> Path:
        """Where files that belong beside the store go (plots, the machine-peaks cache)."""
        return self.path.parent if self.path is not None else LOCAL_FOLDER


def looks_like_url(text: str) -> bool:
    return bool(_URL.match(text.strip()))


def parse_store(value: str | os.PathLike | None) -> StoreLocation:
    """`--store`, else $JITLAB_STORE, else .jitlab/results.sqlite under the working directory."""
    if value is None or value == "":
        value = os.environ.get("JITLAB_STORE") or DEFAULT_STORE
    if isinstance(value, os.PathLike):
        return _sqlite(Path(value))
    text = str(value).strip()
    match = _URL.match(text)
    if not match:
        return _sqlite(Path(text))
    scheme = match.group("scheme").lower()
    if scheme == "sqlite":
        rest = text[len("sqlite://") :]
        if not rest.startswith("/") or rest == "/":
            raise UserError(
                f"store URL {text!r} names no file: write sqlite:///relative.db or sqlite:////abs.db"
            )
        return _sqlite(Path(rest[1:]))
    if scheme in POSTGRES_SCHEMES:
        return _postgres(text)
    raise UserError(
        f"store {mask_password(text)!r}: the {scheme}:// scheme is not supported; give {SUPPORTED_FORMS}"
    )


def _sqlite(path: Path) -> StoreLocation:
    return StoreLocation("sqlite", f"sqlite:///{path}", str(path), path)


def _postgres(text: str) -> StoreLocation:
    parts = urlsplit(text)
    if not parts.hostname and "host=" not in parts.query:
        raise UserError(f"store URL {mask_password(text)!r} names no host: write {POSTGRES_FORM}")
    if not parts.path.strip("/"):
        raise UserError(f"store URL {mask_password(text)!r} names no database: add /DATABASE after the host")
    # SQLAlchemy's URL for psycopg 3 (its default PostgreSQL driver is psycopg2)
    rest = text.split("://", 1)[1]
    remember_url(text)
    return StoreLocation("postgresql", f"postgresql+psycopg://{rest}", mask_password(text))


def mask_password(text: str) -> str:
    """The URL with its password (if any) replaced by *** (`jitlab.secrets`' rule for URLs)."""
    return mask_text(text, secrets=())


def scrub(message: str, location: StoreLocation) -> str:
    """A driver's error message with the store's password removed, on one line."""
    remember_url(location.url)
    return " ".join(mask_text(message).split())
