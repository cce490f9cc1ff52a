"""Confirming synchronisations on CUDA: torch's sync debug mode and the profiler.

**Sync debug mode.** `torch.cuda.set_sync_debug_mode("warn")` makes every synchronising CUDA call
raise a C++ warning (`TORCH_WARN("called a synchronizing CUDA operation")`). C++ warnings reach
Python's `warnings` through a buffer that the *outermost* torch binding on the stack flushes when it
returns. An operator the doctor runs from inside a `TorchDispatchMode` (such as `nonzero`) is called
through a binding that installs no buffer of its own, so its warning is only flushed after the
user's `torch.nonzero(...)` returns: after any `catch_warnings` around the operator itself. (That is
why the doctor used to print "not flagged" while torch printed the warning a moment later.) So the
warnings are captured for the whole monitored call instead, each with the user's frames at the
moment it is shown, which is still the user's line that called torch; an intercepted operation is
confirmed when a sync warning was shown at its line. Where no Python binding is on the stack at all,
torch prints the warning to stderr itself and only the profiler sees the synchronisation.

**Profiler.** One more call under `torch.profiler` with CUDA activity records the CUDA runtime calls
that make the host wait (`cudaStreamSynchronize`, `cudaDeviceSynchronize`, `cudaEventSynchronize`,
a blocking `cudaMemcpy`); with the Python tracer on, each one's enclosing Python functions are known,
so every synchronisation is attributed to the innermost function of the user's code that led to it
(through torch's event tree, in which the runtime calls sit under the Python calls that made them).
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitlab.doctor.location import user_frames

SYNC_WARNING = "called a synchronizing CUDA operation"
#: CUDA runtime calls after which the host has waited for the device
SYNC_RUNTIME_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
#: a profiler event name for a Python function: "path/file.py(12): name" (12: the def line)
_PYTHON_EVENT = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<name>.+)$")


def is_sync_runtime_call(name: str) -> bool:
    """True for the CUDA runtime calls that block the host (a plain `cudaMemcpy` blocks; the
    `cudaMemcpyAsync` of a `.item()` is followed by a `cudaStreamSynchronize`, counted there)."""
    return name.startswith(SYNC_RUNTIME_CALLS) or name == "cudaMemcpy"


@dataclass
class SyncWarnings:
    """User lines (file, line) at which torch's sync debug mode warned, with counts."""

    lines: Counter = field(default_factory=Counter)

    def flagged(self, frame: tuple[str, int]) -> bool:
        return self.lines[frame] > 0


@contextmanager
def capture_sync_warnings(message: str = SYNC_WARNING) -> Iterator[SyncWarnings]:
    """Record every warning containing `message` (torch's sync warning) shown while active, at
    the user's innermost line; other warnings are shown as usual. Each one is shown ("always"),
    however often it repeats."""
    found = SyncWarnings()
    with warnings.catch_warnings():
        warnings.filterwarnings("always", message=".*" + re.escape(message))
        shown = warnings.showwarning

        def show(text: Any, category: Any, filename: str, lineno: int, *rest: Any, **kw: Any) -> None:
            if message in str(text):
                frames = user_frames()
                found.lines[frames[0] if frames else (filename, lineno)] += 1
                return
            shown(text, category, filename, lineno, *rest, **kw)

        warnings.showwarning = show
        yield found


@dataclass(frozen=True)
class ProfiledSync:
    """One blocking CUDA runtime call and the user's function it happened in."""

    call: str
    #: (file basename, def line, function name) of the innermost user function, or None
    function: tuple[str, int, str] | None


def python_function(event_name: str) -> tuple[str, int, str] | None:
    """(basename, def line, name) from a profiler Python-function event name, else None."""
    match = _PYTHON_EVENT.match(event_name)
    if not match:
        return None
    return Path(match["file"]).name, int(match["line"]), match["name"]


def _profiled_call(call: Callable[[], Any]) -> Any:
    """Runs the profiled call: its frame in the profiler's tree marks which events belong to it."""
    return call()


_PROFILED_CALL = (Path(__file__).name, _profiled_call.__code__.co_firstlineno, _profiled_call.__name__)


def attribute(
    roots: list[Any],
    is_sync: Callable[[str], bool],
    is_user: Callable[[str], bool],
    inside: tuple[str, int, str] = _PROFILED_CALL,
) -> list[ProfiledSync]:
    """For each event of the profiler's event tree that `is_sync` accepts and that ran inside the
    Python function `inside` (basename, def line, name), the innermost enclosing Python function
    whose file `is_user` accepts.

    The tree is torch's `experimental_event_tree()`: Python calls, operators and CUDA runtime calls
    nested as they ran on each thread. The flat `prof.events()` list is not used: whether it holds
    the Python calls depends on the torch version (torch 2.11 with CUDA leaves them out). Events
    outside `inside` are left out: the profiler's own exit synchronises the device, under the
    frames of whoever started the profiler (a user's script or test, whose file is a user file)."""
    found = []
    pending = list(roots)
    while pending:
        node = pending.pop()
        pending.extend(node.children)
        if not is_sync(node.name):
            continue
        function = None
        parent = node.parent
        while parent is not None:
            candidate = python_function(parent.name)
            if candidate == inside:
                found.append(ProfiledSync(node.name, function))
                break
            if function is None and candidate is not None and is_user(parent.name.split("(", 1)[0]):
                function = candidate
            parent = parent.parent
    return found


def profile_syncs(
    call: Callable[[], Any], user_files: set[str], is_sync: Callable[[str], bool] = is_sync_runtime_call
) -> list[ProfiledSync]:
    """Run `call` once under the profiler (CUDA activity when available, Python tracer on) and
    attribute each synchronising runtime call made by it to the user's function it ran in.
    `user_files` are the basenames of the user's files (the profiler shortens paths)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities, with_stack=True) as prof:
        _profiled_call(call)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    tree = prof.profiler.kineto_results.experimental_event_tree()
    return attribute(tree, is_sync, lambda path: Path(path).name in user_files)


def summarise(syncs: list[ProfiledSync]) -> dict[tuple[str, int, str], Counter]:
    """Blocking calls per user function: {(basename, def line, name): Counter(call name)}."""
    per_function: dict[tuple[str, int, str], Counter] = {}
    for sync in syncs:
        if sync.function is not None:
            per_function.setdefault(sync.function, Counter())[sync.call] += 1
    return per_function
