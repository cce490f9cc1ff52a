"""A worker goes when its parent goes: `jitlab run`, `capture`, `fuzz` or `machine` (or a pytest
session counting instructions) killed by SIGKILL (the OOM killer, `kill -9`, a CI runner cancelling
a job) takes its workers, and what they started, with it.

Workers run in a session of their own (so a Ctrl-C in the terminal reaches only the parent, which
stops them cleanly: `jitlab.engine.interrupts`). The price was that nothing ended them when the
parent could not: a `jitlab run` killed with SIGKILL left its worker running for the rest of the
cell (a sleeping cell: 300 s), and a compiler's worker pool beside it.

The link is a pipe. The parent (`lifeline`) keeps its write end open while the worker runs and never
writes to it; only the worker receives the read end (`pass_fds`; the parent's ends are
close-on-exec, so no other child holds them). When the parent dies, however it dies, the kernel
closes the write end and the read end reaches end-of-file. Unlike watching the parent's pid, that is
race-free (a parent that died before the worker got as far as looking is an end-of-file already
there), and it works on Linux and macOS alike.

In the worker (`hold_lifeline`, the first thing each worker entry does), the read end is watched by
a guard: a `sh` started as the worker's child, in the worker's process group, blocked on reading the
pipe; at end-of-file it SIGKILLs that process group: the worker, what the worker started (a
compiler's pool, a backend's forked helpers, a workload's own children) and itself. A process of its
own, not a thread in the worker: a thread needs the GIL to act, and a worker inside a long C call
that holds it (a Numba loop does not release it) would keep the thread waiting as long; `sh` costs
about a millisecond to start and nothing while it waits. A group's number is not given to a new
process while any member lives, and the guard is a member, so its kill cannot hit a stranger. Where
`sh` cannot be started, a thread in the worker kills the group instead (`_watch_in_thread`), and
says so on stderr (the worker's log); on Linux the parent-death signal below then usually kills the
worker before that thread can act, so the worker goes but its own children may stay. A worker that
does not lead its own group (a machine probe, or the pytest session the plugin restarts under
Callgrind, in its parent's group) gets that thread only, and kills only itself: never its parent's
group, and no guard that might kill a reused pid.

On Linux the worker also asks for SIGKILL when its parent dies (`prctl(PR_SET_PDEATHSIG)`), which
needs no other process. The kernel sends it when the parent *thread* that started the worker ends,
not the parent process: a `Popen` in a thread-pool thread that then exits would kill a worker still
wanted. It cannot happen here: every place that starts a worker with a lifeline
(`jitlab.engine.runner.run_worker`, `jitlab.capture.harness._run_worker`,
`jitlab.machine.measure.run_probe`, `jitlab.pytest_plugin.restart_under_valgrind`) waits for it in
the same call that started it, so the thread that forked it outlives it (the thread pools of
`capture --jobs`, `fuzz --jobs`, `jitlab backends` and Ray tasks call those synchronously). The
signal kills the worker only; the guard, its group.

A worker that ends normally stops its guard and reaps it (`release_lifeline`), so no orphaned `sh`
waits for a reaper; the parent closes its end once the worker has ended (the guard of a worker that
ended without stopping it then sweeps what is left of the group). Nothing here changes a normal run,
a Ctrl-C or a timeout: they kill the worker's process group as before, the guard with it, and the
store is written by the parent only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: environment variable carrying the read end's file descriptor number to the worker
LIFELINE_FD_ENV = "JITLAB_LIFELINE_FD"

#: the guard: wait for end-of-file on the pipe (its standard input; the parent never writes), then
#: SIGKILL the process group given as $1 (`-PGID`)
_GUARD_SCRIPT = 'read -r line; kill -s KILL -- "$1"'
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Lifeline:
    """The parent's side while one worker runs: what to give `Popen` (`env`, `pass_fds`)."""

    read_fd: int
    write_fd: int

    @property
    def env(self) -> dict[str, str]:
        return {LIFELINE_FD_ENV: str(self.read_fd)}

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self.read_fd,)


@contextmanager
def lifeline() -> Iterator[Lifeline]:
    """A pipe for one worker: start the worker inside the block with `env` and `pass_fds`, and wait
    for it (and kill its group) inside the block too. Leaving the block closes the parent's ends;
    the guard of a worker still running would then kill its group."""
    read_fd, write_fd = os.pipe()  # both close-on-exec: only `pass_fds` hands the read end on
    try:
        yield Lifeline(read_fd, write_fd)
    finally:
        for fd in (read_fd, write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


_guard: subprocess.Popen | None = None


def hold_lifeline() -> None:
    """In a worker started with a `lifeline`: die, with the worker's process group, when the parent
    does. Does nothing in a process started otherwise (a worker run by hand)."""
    global _guard
    raw = os.environ.pop(LIFELINE_FD_ENV, None)  # not for the processes this worker starts
    if raw is None:
        return
    fd = int(raw)
    _die_with_parent_on_linux()
    group = os.getpgrp()
    if group != os.getpid():
        # not in a session of its own (a probe in its parent's group): never kill that group, and no
        # guard either: one killing a pid after its process was reaped could hit a new process that
        # got the number (a group's number is not handed out while the guard is in the group)
        _watch_in_thread(fd, lambda: os.kill(os.getpid(), signal.SIGKILL))
        return
    try:
        _guard = subprocess.Popen(
            ["sh", "-c", _GUARD_SCRIPT, "jitlab-lifeline", f"-{group}"],
            stdin=fd,
            stdout=subprocess.DEVNULL,  # never holds the worker's output open
            stderr=subprocess.DEVNULL,
        )
    except OSError as exc:
        print(f"jitlab: no guard process ({exc}); watching the parent from a thread", file=sys.stderr)
        _watch_in_thread(fd, lambda: os.killpg(group, signal.SIGKILL))
        return
    os.close(fd)


def guard_pid() -> int | None:
    """The pid of this worker's guard process (None: none was started)."""
    return _guard.pid if _guard is not None else None


def release_lifeline() -> None:
    """Stop and reap the guard of a worker that is ending normally (nothing left to guard)."""
    global _guard
    if _guard is None:
        return
    try:
        _guard.kill()
        _guard.wait()
    except OSError:
        pass
    _guard = None


def _die_with_parent_on_linux() -> None:
    """SIGKILL this process when the thread that started it ends (see the module docstring)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the guard does the same, a moment later; it also covers macOS


def _watch_in_thread(fd: int, kill: Callable[[], None]) -> None:
    """Call `kill` from a thread of this process once the pipe `fd` reaches end-of-file."""

    def watch() -> None:
        while os.read(fd, 1):
            pass
        kill()

    threading.Thread(target=watch, name="jitlab-lifeline", daemon=True).start()
