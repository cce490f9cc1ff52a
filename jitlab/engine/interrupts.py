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


def _on_sigint(signum: int, frame: object) -> None:
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


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Take Ctrl-C at safe points inside the block (only in the main thread, where Python delivers
    signals, and only where SIGINT is not ignored as in a shell's background job; elsewhere the block
    runs unchanged). Raises `KeyboardInterrupt` at its end if Ctrl-C
    came after the last safe point."""
    global _requested
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a background job: Ctrl-C is not for us
    ):
        yield
        return
    _requested = False
    previous = signal.signal(signal.SIGINT, _on_sigint)
    # SIGTERM (`kill`, a job scheduler's time limit) is taken the same way: Python's default would end
    # the run at once and leave the workers, each in a process group of its own, running
    previous_term = signal.getsignal(signal.SIGTERM)
    if previous_term is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigint)
    try:
        yield
        raise_if_interrupted()
    finally:
        signal.signal(signal.SIGINT, previous)
        if previous_term is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, previous_term)
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
