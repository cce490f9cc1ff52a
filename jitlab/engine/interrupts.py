"""Ctrl-C (and SIGTERM) during a local run, taken at safe points.

Python raises `KeyboardInterrupt` wherever the main thread happens to be: inside `subprocess.Popen`
after the worker was forked (so nobody kills it), inside a store transaction, or while the progress
bar's lock is held (so leaving the bar waits forever for its refresh thread). A run that hangs or
leaves a worker behind on Ctrl-C loses the user's trust in "an interrupted run keeps what finished".

So while cells run locally, the first Ctrl-C only records the request and kills the running worker
process groups; the runner raises `KeyboardInterrupt` itself where nothing is half done: right after
a worker ends, and before the next cell starts. A second Ctrl-C raises at once, as Python would.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_workers: set[int] = set()
_requested = False


def _on_interrupt(signum: int, frame: object) -> None:
    """The first Ctrl-C or SIGTERM: record it and kill the workers; a second one raises at once."""
    global _requested
    if _requested:  # the user insists: stop wherever we are
        raise KeyboardInterrupt
    _requested = True
    for pid in list(_workers):
        kill_process_group(pid)


def kill_process_group(pid: int) -> None:
    """SIGKILL a worker's whole process group (its compiler children too); gone already is fine."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _taken(signum: int) -> bool:
    """Whether the block takes `signum`: Ctrl-C unless it is ignored (a shell's background job: it is
    not for us), SIGTERM (`kill`, a job scheduler's time limit) unless the program set a handler of
    its own. Python's default for SIGTERM ends the run at once and leaves the workers, each in a
    process group of its own, running."""
    current = signal.getsignal(signum)
    if signum == signal.SIGINT:
        return current is not signal.SIG_IGN
    return current is signal.SIG_DFL


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Take Ctrl-C and SIGTERM at safe points inside the block (only in the main thread, where
    Python delivers signals; `_taken` says when each is left alone; elsewhere the block runs
    unchanged). Raises `KeyboardInterrupt` at its end if one came after the last safe point."""
    global _requested
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            if _taken(signum):
                previous[signum] = signal.signal(signum, _on_interrupt)
    if not previous:
        yield
        return
    _requested = False
    try:
        yield
        raise_if_interrupted()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _requested = False


def interrupt_requested() -> bool:
    """Whether Ctrl-C was pressed since the block began (for loops that must finish a step first)."""
    return _requested


def raise_if_interrupted() -> None:
    """A safe point: raise `KeyboardInterrupt` if Ctrl-C was pressed since the block began."""
    if _requested:
        raise KeyboardInterrupt


@contextmanager
def watched_worker(pid: int) -> Iterator[None]:
    """While the block runs, a Ctrl-C kills the worker's process group at once (a worker started
    just after the Ctrl-C is killed on entry)."""
    _workers.add(pid)
    try:
        if _requested:
            kill_process_group(pid)
        yield
    finally:
        _workers.discard(pid)
