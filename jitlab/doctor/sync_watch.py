"""Watching one call for host-device synchronisations and data-dependent output shapes.

The events this module collects are read by the doctor's context (`DoctorContext.sync_events`) and turned
into findings by the `sync` check (sync.py); it imports neither, so that the context, the check registry
and the checks import one way.

Two interception layers see different things:
- a `TorchFunctionMode` sees Python-level tensor methods that hand a value to the host: `.item()`,
  `bool()` (Python control flow on a tensor), `int()`/`float()`/`index`, `.tolist()`, `.cpu()`,
  `.numpy()`, and printing (`__repr__`/`__format__`);
- a `TorchDispatchMode` sees ATen operators whose output shape depends on the data (`nonzero`,
  `unique`, `masked_select`, indexing with a boolean mask, `repeat_interleave` without
  `output_size`) and any other read of a value by the host (`_local_scalar_dense`, `is_nonzero`,
  `equal`).
While one intercepted call runs, nested interceptions are ignored (printing a tensor calls `.item()`
internally; that is one finding, not hundreds). On the CPU these operations do not wait for anything,
but on a GPU each one makes the host wait for the device, so they are reported everywhere; on CUDA
they are confirmed with `torch.cuda.set_sync_debug_mode("warn")` and the profiler
(`jitlab.doctor.cuda_confirm`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any

from jitlab.doctor.location import format_location, user_frames, user_functions

SYNC = "sync"
SHAPE = "data-dependent-shape"


@dataclass(frozen=True)
class SyncEvent:
    """One interception: which operation, and the user's frames (innermost first) that caused it."""

    kind: str  # SYNC or SHAPE
    op: str
    frames: tuple[tuple[str, int], ...]
    confirmed: bool | None = None  # on CUDA: did set_sync_debug_mode flag it? None: not checked
    #: the user's functions (file, def line, name), innermost first, to match the profiler's events
    functions: tuple[tuple[str, int, str], ...] = ()

    @property
    def location(self) -> str:
        return format_location(*self.frames[0]) if self.frames else "<unknown>"


# Tensor methods that hand a value to the host, with what the report says about them.
_METHOD_DETAILS = {
    "item": ("Tensor.item()", "copies one value to the host"),
    "__bool__": ("bool(tensor)", "Python control flow on a tensor value needs the value on the host"),
    "__int__": ("int(tensor)", "converting a tensor to a Python int needs the value on the host"),
    "__float__": ("float(tensor)", "converting a tensor to a Python float needs the value on the host"),
    "__index__": ("operator.index(tensor)", "using a tensor as a Python index needs its value"),
    "tolist": ("Tensor.tolist()", "copies the whole tensor to Python objects on the host"),
    "cpu": (".cpu()", "copies the tensor to host memory"),
    "numpy": (".numpy()", "hands the tensor's memory to NumPy on the host"),
    "__repr__": ("printing a tensor", "formatting a tensor reads its values on the host"),
    "__format__": ("formatting a tensor", "formatting a tensor reads its values on the host"),
}

_SYNC_SUGGESTIONS = {
    "item": "keep the value on the device (torch.where, clamp, masking) or read it once after the hot path",
    "__bool__": "replace the Python branch with torch.where or arithmetic masks, or decide on the host "
    "from data that is already there",
    "__int__": "keep the value as a 0-d tensor and compute with it on the device",
    "__float__": "keep the value as a 0-d tensor and compute with it on the device",
    "__index__": "index with the tensor itself (gather/index_select) instead of a Python int",
    "tolist": "keep the data in tensors; convert once at the end if Python objects are needed",
    "cpu": "move results to the host once, after the computation, not in the middle of it",
    "numpy": "move results to the host once, after the computation, not in the middle of it",
    "__repr__": "log less often, or accumulate values on the device and print them once at the end",
    "__format__": "log less often, or accumulate values on the device and print them once at the end",
}

_SHAPE_SUGGESTION = (
    "use a static-shape equivalent: count with count_nonzero/sum, choose with torch.where and random "
    "scores, select a fixed number with topk and gather (or nonzero_static with a size bound)"
)

# Dispatch-level operators: name -> (kind, what it is)
_SHAPE_OPS = {
    "nonzero": "torch.nonzero: output size depends on how many elements are non-zero",
    "argwhere": "torch.argwhere: output size depends on the data",
    "_unique": "torch.unique: output size depends on the number of distinct values",
    "_unique2": "torch.unique: output size depends on the number of distinct values",
    "unique_dim": "torch.unique: output size depends on the number of distinct values",
    "unique_consecutive": "torch.unique_consecutive: output size depends on the data",
    "unique_dim_consecutive": "torch.unique_consecutive: output size depends on the data",
    "masked_select": "torch.masked_select: output size depends on how many mask elements are true",
}
_SCALAR_READS = {
    "_local_scalar_dense": "an operation read a tensor value on the host",
    "is_nonzero": "an operation tested a tensor's truth value on the host",
    "equal": "torch.equal returns a Python bool, read on the host",
}


def _is_bool_index(value: Any) -> bool:
    import torch

    if isinstance(value, torch.Tensor):
        return value.dtype in (torch.bool, torch.uint8)
    if isinstance(value, (list, tuple)):
        return any(_is_bool_index(v) for v in value if v is not None)
    return False


class SyncMonitor:
    """Collects `SyncEvent`s while active: `with SyncMonitor() as monitor: fn(...)`."""

    def __init__(self) -> None:
        self.events: list[SyncEvent] = []
        self._depth = 0
        self._modes: list[Any] = []
        self._previous_debug_mode: int | None = None
        self._warning_capture: AbstractContextManager | None = None
        self._sync_warnings: Any = None

    # ---- recording ----
    def _record(self, kind: str, op: str) -> None:
        self.events.append(SyncEvent(kind, op, tuple(user_frames()), None, tuple(user_functions())))

    def run_intercepted(self, kind: str, op: str, call: Callable[[], Any]) -> Any:
        """Run `call` with nested interceptions silenced, then record it. On CUDA the confirmation
        is decided when the monitor closes: torch shows the sync warning only after the user's call
        into torch returns (see `jitlab.doctor.cuda_confirm`)."""
        self._depth += 1
        try:
            result = call()
        finally:
            self._depth -= 1
        self._record(kind, op)
        return result

    @property
    def quiet(self) -> bool:
        return self._depth > 0

    # ---- activation ----
    def __enter__(self) -> SyncMonitor:
        import torch

        if torch.cuda.is_available():  # the CPU build raises in set_sync_debug_mode
            from jitlab.doctor.cuda_confirm import capture_sync_warnings

            self._warning_capture = capture_sync_warnings()
            self._sync_warnings = self._warning_capture.__enter__()
            self._previous_debug_mode = torch.cuda.get_sync_debug_mode()
            torch.cuda.set_sync_debug_mode("warn")
        self._modes = [_FunctionSpy(self), _DispatchSpy(self)]
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        import torch

        for mode in reversed(self._modes):
            mode.__exit__(*exc)
        self._modes = []
        if self._previous_debug_mode is not None:
            torch.cuda.set_sync_debug_mode(self._previous_debug_mode)
            self._previous_debug_mode = None
        if self._warning_capture is not None:
            self._warning_capture.__exit__(*exc)
            flagged = self._sync_warnings
            self.events = [
                replace(e, confirmed=bool(e.frames) and flagged.flagged(e.frames[0])) for e in self.events
            ]
            self._warning_capture = None


@functools.lru_cache(maxsize=1)
def _function_spy_class() -> type:
    import torch
    from torch.overrides import TorchFunctionMode

    watched = {getattr(torch.Tensor, name): name for name in _METHOD_DETAILS}

    class FunctionSpy(TorchFunctionMode):
        def __init__(self, monitor: SyncMonitor) -> None:
            super().__init__()
            self.monitor = monitor

        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            name = watched.get(func)
            if name is None or self.monitor.quiet:
                return func(*args, **kwargs)
            return self.monitor.run_intercepted(SYNC, name, lambda: func(*args, **kwargs))

    return FunctionSpy


@functools.lru_cache(maxsize=1)
def _dispatch_spy_class() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode

    class DispatchSpy(TorchDispatchMode):
        def __init__(self, monitor: SyncMonitor) -> None:
            super().__init__()
            self.monitor = monitor

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            if self.monitor.quiet:
                return func(*args, **kwargs)
            name = func._overloadpacket.__name__
            call = lambda: func(*args, **kwargs)  # noqa: E731
            if name in _SHAPE_OPS:
                return self.monitor.run_intercepted(SHAPE, name, call)
            if name == "index" and len(args) > 1 and _is_bool_index(args[1]):
                return self.monitor.run_intercepted(SHAPE, "bool-index", call)
            if name in ("index_put", "index_put_") and len(args) > 1 and _is_bool_index(args[1]):
                return self.monitor.run_intercepted(SYNC, "bool-index-put", call)
            if (
                name == "repeat_interleave"
                and func._overloadname in ("Tensor", "self_Tensor")
                and kwargs.get("output_size") is None
            ):
                return self.monitor.run_intercepted(SHAPE, "repeat_interleave", call)
            if name in _SCALAR_READS:
                return self.monitor.run_intercepted(SYNC, name, call)
            return call()

    return DispatchSpy


def _FunctionSpy(monitor: SyncMonitor) -> Any:  # noqa: N802 - builds the mode lazily (torch import)
    return _function_spy_class()(monitor)


def _DispatchSpy(monitor: SyncMonitor) -> Any:  # noqa: N802
    return _dispatch_spy_class()(monitor)


def describe(event: SyncEvent) -> tuple[str, str]:
    """(detail, suggestion) for one event."""
    if event.kind == SHAPE:
        if event.op == "bool-index":
            what = "indexing with a boolean mask: output size depends on how many mask elements are true"
        elif event.op == "repeat_interleave":
            what = "torch.repeat_interleave without output_size: output size depends on the repeats"
        else:
            what = _SHAPE_OPS[event.op]
        return what, _SHAPE_SUGGESTION
    if event.op == "bool-index-put":
        return (
            "assigning through a boolean mask: the mask is turned into indices, which waits for the device",
            "use torch.where(mask, value, x) to keep the shape static and stay asynchronous",
        )
    if event.op in _METHOD_DETAILS:
        label, why = _METHOD_DETAILS[event.op]
        return f"{label}: {why}", _SYNC_SUGGESTIONS[event.op]
    return _SCALAR_READS[event.op], "keep the value on the device, or read it once after the hot path"
