"""What every check needs: the target, its inputs, and a way to call the user's code.

Calls go through `DoctorContext.call`, which sends the user's prints to stderr (so `--json` output
stays one JSON object) and turns an exception raised by the user's code into `UserCodeFailed`, which
the command line shows as a traceback of the user's frames. Results shared by several checks (the
events of one monitored call, the scaled inputs) are computed once and cached here.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jitlab.doctor.location import is_user_file
from jitlab.doctor.target import Inputs, Target, describe_exception
from jitlab.errors import UserError

if TYPE_CHECKING:
    from jitlab.doctor.sync_watch import SyncEvent


class UserCodeFailed(Exception):
    """The user's own code raised while being diagnosed; `exc` is their exception."""

    def __init__(self, target: str, exc: BaseException, during: str) -> None:
        super().__init__(f"{target} raised {type(exc).__name__} while {during}")
        self.target = target
        self.exc = exc
        self.during = during

    def user_traceback(self) -> str:
        """The traceback from the user's first frame on, without jitlab's or torch's machinery."""
        frames = traceback.extract_tb(self.exc.__traceback__)
        first = next((i for i, f in enumerate(frames) if is_user_file(f.filename)), None)
        kept = frames[first:] if first is not None else frames
        kept = traceback.StackSummary.from_list(
            [f for f in kept if is_user_file(f.filename) or not _is_machinery(f.filename)]
        )
        lines = ["Traceback (most recent call last):\n", *kept.format()]
        lines += traceback.format_exception_only(type(self.exc), self.exc)
        return "".join(lines).rstrip("\n")


def _is_machinery(filename: str) -> bool:
    """jitlab itself and torch's interception layers, which say nothing about the user's bug."""
    name = filename.replace("\\", "/")
    return "/jitlab/" in name or name.endswith(("torch/overrides.py", "torch/utils/_python_dispatch.py"))


@dataclass
class DoctorContext:
    target: Target
    inputs: Inputs
    _cache: dict[str, Any] = field(default_factory=dict)

    def call(self, inputs: Inputs | None = None, during: str = "running") -> Any:
        """Call the target once; the user's exception becomes `UserCodeFailed`."""
        return self.call_with(self.target.function, inputs, during)

    def call_with(self, function: Callable[..., Any], inputs: Inputs | None, during: str) -> Any:
        """Call `function` (the target or a wrapper of it, e.g. compiled) with the inputs."""
        use = inputs if inputs is not None else self.inputs
        # the first call's prints go to stderr (so --json stays clean); later calls' are dropped
        quiet = self._cache.setdefault("calls", 0) > 0
        self._cache["calls"] += 1
        sink = open(os.devnull, "w") if quiet else contextlib.nullcontext(sys.stderr)  # noqa: SIM115
        with sink as stream, contextlib.redirect_stdout(stream):
            try:
                return function(*use.args, **use.kwargs)
            except Exception as exc:
                raise UserCodeFailed(self.target.spec, exc, during) from exc

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def sync_events(self) -> list[SyncEvent]:
        """The events of one call under the sync monitor (run once, shared by several checks)."""

        def monitor() -> list[SyncEvent]:
            from jitlab.doctor.sync_watch import SyncMonitor

            with SyncMonitor() as watcher:
                self.call(during="watching for synchronisations")
            return watcher.events

        return self.cached("sync_events", monitor)

    def profiled_syncs(self) -> dict[tuple[str, int, str], Any]:
        """On CUDA: the blocking CUDA runtime calls of one profiled call, per user function
        ((basename, def line, name) -> Counter of call names); empty on the CPU."""

        def profile() -> dict[tuple[str, int, str], Any]:
            import torch

            if not torch.cuda.is_available():
                return {}
            from jitlab.doctor.cuda_confirm import profile_syncs, summarise

            files = {os.path.basename(f) for e in self.sync_events() for f, _ in e.frames}
            if self.target.file:
                files.add(os.path.basename(self.target.file))
            return summarise(profile_syncs(lambda: self.call(during="profiling synchronisations"), files))

        return self.cached("profiled_syncs", profile)

    def scaled_inputs(self) -> tuple[Inputs | None, str]:
        """The inputs at twice the size and how they were made, or (None, why not)."""

        def make() -> tuple[Inputs | None, str]:
            try:
                scaled, how = self.inputs.scaled(2)
            except UserError as exc:
                return None, str(exc)
            try:
                self.call(scaled, during="running at twice the input size")
            except UserCodeFailed as failed:
                return None, (
                    f"the call with {how} raised {describe_exception(failed.exc)}; "
                    "give --inputs a function with a `scale` parameter"
                )
            return scaled, how

        return self.cached("scaled_inputs", make)
