"""Riding out a store outage: which database errors mean "the store cannot be reached right now"
(retried with exponential backoff up to a limit) rather than "this store or URL is wrong" (bad
input, reported at once), and the waiting itself.

A team store on a server blinks (a restart, a failover, a network hiccup). A run that stops at the
first refused connection loses nothing, but it ends a CI job that had nothing wrong with it. So a
store retries an operation whose connection was lost, tells its listener how long it keeps trying
(the command line prints "store unreachable, retrying for 1m50s"), and gives up with
`StoreUnreachable` after the limit (its own exit code, with what to do).

Which errors are transient: SQLAlchemy's own verdict that the connection was invalidated (a
disconnect it recognised), PostgreSQL's connection-exception (SQLSTATE class 08) and shutdown
codes (57P01-57P03: administrator or crash shutdown, "the database system is starting up"), a
connection attempt that no server answered (libpq gives no SQLSTATE for those; a server that
answered and refused, such as a failed password or an unknown database, says FATAL and is bad
input), and SQLite's "database is locked" after its own wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from jitlab.errors import UserError

#: how long a store keeps retrying a lost connection by default (`--store-retry`)
DEFAULT_RETRY_S = 120.0
#: the first wait after a failure, doubled after each until MAX_BACKOFF_S
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 15.0
#: PostgreSQL error codes of a server going away or not yet back
SHUTDOWN_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
#: what a server that is starting or stopping answers to a new connection (no SQLSTATE on connect)
NOT_YET_ACCEPTING = ("the database system is starting up", "the database system is shutting down",
                     "the database system is in recovery mode", "the database system is not yet accepting")  # fmt: skip

T = TypeVar("T")

#: hears (seconds left, the error's one-line reason) before each wait
WaitListener = Callable[[float, str], None]


class StoreUnreachable(Exception):
    """The store could not be reached for longer than the retry limit. Not bad input: what was
    written before is kept, and the same command can be run again (`--resume RUN_ID` for a run)."""

    #: what the command line tells the user to do (a command that knows better replaces it)
    DEFAULT_ADVICE = "check that the server runs, then run the command again"

    def __init__(self, message: str, waited_s: float, advice: str = DEFAULT_ADVICE) -> None:
        super().__init__(message)
        self.waited_s = waited_s
        self.advice = advice


def is_transient(exc: BaseException) -> bool:
    """Whether `exc` (a SQLAlchemy DBAPIError, or the driver's own error) means the store cannot be
    reached for now, as opposed to a store or URL that is wrong."""
    if getattr(exc, "connection_invalidated", False):
        return True
    error = getattr(exc, "orig", None) or exc
    module = type(error).__module__ or ""
    message = str(error)
    if module.startswith("psycopg"):
        import psycopg

        sqlstate = getattr(error, "sqlstate", None)
        if sqlstate:
            return sqlstate.startswith("08") or sqlstate in SHUTDOWN_SQLSTATES
        if any(text in message for text in NOT_YET_ACCEPTING):
            return True
        # a connection attempt that failed without a server's FATAL answer: nothing listened
        return isinstance(error, psycopg.OperationalError) and "FATAL" not in message
    if module.startswith("sqlite3"):
        return "database is locked" in message
    return False


def reason(exc: BaseException) -> str:
    """The first line of the driver's message (what `describe` and the listener show)."""
    error = getattr(exc, "orig", None) or exc
    text = str(error).strip()
    return " ".join(text.splitlines()[0].split()) if text else type(error).__name__


def duration(seconds: float) -> str:
    """1m50s, 45s, 2h05m: how long a wait lasts, for people."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


@dataclass
class Retrying:
    """Runs store operations, retrying the transient failures with exponential backoff for at most
    `limit_s` seconds of continuous outage; `on_wait` hears each wait."""

    limit_s: float = DEFAULT_RETRY_S
    on_wait: WaitListener | None = None
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if self.limit_s < 0:
            raise UserError(
                f"--store-retry {self.limit_s:g} is negative: give seconds, e.g. 120 (0: no retry)"
            )

    def call(self, operation: Callable[[], T], doing: str, where: str, scrub: Callable[[str], str]) -> T:
        """`operation()`, run again after each transient failure until it succeeds or `limit_s` has
        passed since the first failure; then `StoreUnreachable` naming `where` and what failed.
        The operation must be safe to repeat (each is one transaction that is idempotent)."""
        from sqlalchemy.exc import DBAPIError

        started: float | None = None
        backoff = FIRST_BACKOFF_S
        while True:
            try:
                return operation()
            except DBAPIError as exc:
                if not is_transient(exc):
                    raise
                now = time.monotonic()
                started = now if started is None else started
                left = self.limit_s - (now - started)
                why = scrub(reason(exc))
                if left <= 0:
                    waited = now - started
                    for_how_long = f" for {duration(waited)}" if waited >= 1 else ""
                    raise StoreUnreachable(
                        f"cannot {doing} the store {where}: unreachable{for_how_long} ({why})", waited
                    ) from exc
                if self.on_wait is not None:
                    self.on_wait(left, why)
                self.sleep(min(backoff, left))
                backoff = min(backoff * 2, MAX_BACKOFF_S)
