"""`with torch.autocast(...)` inside a jitted call, recorded as graph nodes.

Autocast acts below the operations a graph records: `linear(x, w)` is recorded, the cast of `x` and
`w` to bfloat16 that autocast makes inside it is not. So entering and leaving an autocast region are
recorded as nodes of their own, as TorchDynamo records them: `enter_autocast(device, dtype, enabled,
cache_enabled)` where the program's `__enter__` ran, `exit_autocast(ctx)` where its `__exit__` ran.

- Run as they are (backend "eager"), the nodes switch autocast on and off around the operations
  between them, with torch's own context manager: its nesting count, and its cache of parameters
  cast once per region, behave as in eager code.
- A compiler traces them: AOTAutograd runs the graph's Python under its tracing mode, the nodes
  switch autocast on while the operations between them are traced, and the casts autocast makes are
  recorded into the compiled graph, which then needs no autocast at run time.

Both need the regions to close inside the graph that opened them; what cannot keep that runs the
graph uncompiled or eagerly, with the reason: a graph break, or a host operation of a training step
(frontend/host_split.py), inside a region (`open_before`). A graph that raises inside a region would
leave autocast on, where eager code's `with` would have closed it: the contexts entered are kept on a
per-thread stack, and `unwinding` closes those the graph left open before the exception goes on
(the call is then run again eagerly, or raises as eager code does).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import torch
import torch.fx as fx

from jitlab.jit.reasons import ReasonKind


class _Entered(threading.local):
    """The autocast contexts the graph nodes of this thread entered and have not left yet."""

    def __init__(self) -> None:
        self.stack: list[torch.autocast] = []


_ENTERED = _Entered()


@torch.fx.node.has_side_effect
def enter_autocast(
    device_type: str, dtype: torch.dtype | None, enabled: bool, cache_enabled: bool | None
) -> torch.autocast:
    """Enter `torch.autocast(device_type, dtype, enabled, cache_enabled)` and return it (a graph node:
    its result is the `exit_autocast` node's argument)."""
    ctx = torch.autocast(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
    ctx.__enter__()
    _ENTERED.stack.append(ctx)
    return ctx


@torch.fx.node.has_side_effect
def exit_autocast(ctx: torch.autocast) -> None:
    """Leave the region `ctx` (an `enter_autocast` node's result) as torch's `with` leaves it."""
    stack = _ENTERED.stack
    if stack and stack[-1] is ctx:
        stack.pop()
    elif ctx in stack:
        stack.remove(ctx)
    ctx.__exit__(None, None, None)


def depth() -> int:
    """How many autocast regions graph nodes of this thread have entered and not left."""
    return len(_ENTERED.stack)


def unwind(to_depth: int) -> None:
    """Leave, innermost first, the regions entered beyond `to_depth` (a graph that raised inside them)."""
    stack = _ENTERED.stack
    while len(stack) > to_depth:
        stack.pop().__exit__(None, None, None)


@contextmanager
def contained() -> Iterator[None]:
    """Around code that runs a graph with autocast nodes and may stop inside a region (a compiler
    tracing it, a run on fake tensors): whatever regions it left open are closed after it."""
    start = depth()
    try:
        yield
    finally:
        unwind(start)


def unwinding(run: Callable[..., Any]) -> Callable[..., Any]:
    """`run` (a graph with autocast nodes, compiled or not), closing the regions it left open when it
    raises."""

    @functools.wraps(run)
    def guarded(*args: object) -> Any:
        start = len(_ENTERED.stack)
        try:
            return run(*args)
        except BaseException:
            unwind(start)
            raise

    return guarded


def is_autocast_node(node: fx.Node) -> bool:
    return node.op == "call_function" and (node.target is enter_autocast or node.target is exit_autocast)


def has_autocast_nodes(graph: fx.Graph) -> bool:
    """Whether `graph` enters or leaves an autocast region."""
    return any(is_autocast_node(n) for n in graph.nodes)


def open_before(nodes: list[fx.Node]) -> list[int]:
    """For each node of `nodes` (a graph's nodes in order), and after the last: how many autocast
    regions the nodes before it entered and did not leave. A graph cut where it is not 0 would leave
    a region open across the cut."""
    regions = 0
    counts = []
    for node in nodes:
        counts.append(regions)
        if node.op == "call_function" and node.target is enter_autocast:
            regions += 1
        elif node.op == "call_function" and node.target is exit_autocast:
            regions -= 1
    counts.append(regions)
    return counts


def autocast_switch(fn: object, args: tuple) -> torch.autocast | None:
    """The `torch.autocast` (or one of its per-device subclasses) whose `__enter__` or `__exit__` the
    call `fn(*args)` is, bound or with the context first among `args`; None for any other call."""
    name = getattr(fn, "__name__", None)
    if name != "__enter__" and name != "__exit__":
        return None
    owner = getattr(fn, "__self__", None)
    if owner is None and args:
        owner = args[0]
        if getattr(type(owner), name, None) is not fn:
            return None
    return owner if isinstance(owner, torch.amp.autocast_mode.autocast) else None


def autocast_state() -> tuple[object, ...]:
    """Autocast's per-thread state now, for every device type: whether it is on, its dtype, and
    whether its cache is on. Compared before each recorded operation with what the recorded regions
    make it, so that a change made some other way (`torch.set_autocast_enabled`) is refused."""
    state: list[object] = [torch.is_autocast_cache_enabled()]
    for device in _device_types():
        state.append(torch.is_autocast_enabled(device))
        state.append(torch.get_autocast_dtype(device))
    return tuple(state)


def autocast_summary(state: tuple[object, ...]) -> str:
    """`autocast_state()`'s devices that have autocast on, with their dtypes: "cpu bfloat16"."""
    on = [
        f"{device} {str(dtype).removeprefix('torch.')}"
        for device, enabled, dtype in zip(_device_types(), state[1::2], state[2::2], strict=True)
        if enabled
    ]
    return ", ".join(on) or "off"


@functools.cache
def _device_types() -> tuple[str, ...]:
    found = []
    for device in ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "mtia", "ipu"):
        try:
            torch.is_autocast_enabled(device)
            torch.get_autocast_dtype(device)
        except Exception:  # noqa: S112 -- a device type this torch has no autocast state for
            continue
        found.append(device)
    return tuple(found)


#: what an `enter_autocast` node takes from the program's context
_BAKED = ("device", "fast_dtype", "_enabled", "_cache_enabled")


class AutocastTracer(Protocol):
    """What recording an autocast region uses of the tracer."""

    def is_fresh(self, obj: object) -> bool: ...

    def source_of(self, value: object) -> object | None: ...

    def load_attr(self, obj: object, name: str) -> object: ...

    def problem(self, message: str, kind: ReasonKind) -> None: ...


class AutocastRecorder(Protocol):
    """What recording an autocast region uses of the graph recorder (graph/recorder.py)."""

    graph: fx.Graph
    tracer: AutocastTracer
    #: the regions entered during the capture and not left yet: id of the context -> (it, its node)
    autocast_open: dict[int, tuple[object, fx.Node]]
    #: autocast's state as the regions recorded so far leave it (None: autocast is off)
    autocast_expected: tuple[object, ...] | None
    #: autocast's state at the call's start, when the call is made inside a region (None: off)
    autocast_start: tuple[object, ...] | None

    def sync_grad_mode(self) -> None: ...


def record_switch(
    recorder: AutocastRecorder, ctx: torch.autocast, method: Callable[..., Any], args: tuple
) -> Any:
    """The program enters or leaves `ctx` (a `torch.autocast`): run its `__enter__` or `__exit__` as
    eager code does, so that the capture goes on under the state eager code has, and record the node
    that does the same when the graph runs. The node bakes in the context's device, dtype and
    switches: read from a context made outside the call (a global, the one `@torch.autocast(...)`
    keeps for the function it decorates), they are guarded; one of unknown origin is refused. The
    context's own record of the state it found (`prev`) is left as eager code leaves it: the guards
    make the state it finds on every call the one of the capture."""
    recorder.sync_grad_mode()
    entering = method.__name__ == "__enter__"  # type: ignore[attr-defined]
    tracer = recorder.tracer
    if not tracer.is_fresh(ctx):
        if tracer.source_of(ctx) is None:
            tracer.problem(
                "a torch.autocast of unknown origin (made by native code) is entered or left inside the call: "
                "make it inside the call (`with torch.autocast(...)`)",
                ReasonKind.GLOBAL_STATE,
            )
            return method(*args)
        for name in _BAKED:
            tracer.load_attr(ctx, name)  # guarded
    result = method(*args)
    if entering:
        node = recorder.graph.call_function(
            enter_autocast,
            (ctx.device, ctx.fast_dtype, ctx._enabled, ctx._cache_enabled),
        )
        recorder.autocast_open[id(ctx)] = (ctx, node)
    else:
        entered = recorder.autocast_open.pop(id(ctx), None)
        if entered is None:
            recorder.tracer.problem(
                "a torch.autocast entered before the call is left inside it", ReasonKind.GLOBAL_STATE
            )
            return result
        recorder.graph.call_function(exit_autocast, (entered[1],))
    recorder.autocast_expected = autocast_state() if recorder.autocast_open else recorder.autocast_start
    return result
