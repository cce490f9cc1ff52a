"""The graph-capture methods compared by `jitlab capture`, each behind one small function.

A method turns a fresh model and example inputs into a `Captured`: the callable the user would call
from then on, the object whose state the user would keep looking at, and a `full_graph()` verdict
read after the calls. What "one full graph" means per method:

- jitlab:  `jitlab.jit(model, backend="eager")`; its `explain()` report shows at least one graph,
           no break (the JIT counts specialising on a data value as one) and no fallback.
- dynamo:  `torch.compile(model, backend=<eager, counting>, fullgraph=True)`; every call succeeds
           (fullgraph=True raises at any graph break) and at least one graph was made.
- export:  `torch.export.export(module, args, kwargs)` (default, non-strict) succeeds; plain
           functions are wrapped in a Module. Calls go to `ExportedProgram.module()`.
- fx:      `torch.fx.symbolic_trace(model)` succeeds.
- script:  `torch.jit.script(model)` succeeds.
- trace:   `torch.jit.trace(model, args, example_kwarg_inputs=kwargs, check_trace=False)` succeeds.
           With keyword inputs, all inputs are bound by name (trace takes one kind of example).
           Tracing silently specialises control flow on the example; the output comparison shows it.

For both JITs a guard miss on an outside value (an attribute counter, a global) makes a new
whole-program graph: that still counts as one full graph per call; the `graphs` field says how
many were made over the calls. A program split at graph breaks is not one full graph; how many
graphs one call runs (`graphs_per_call`) is reported for jitlab and, with graph breaks allowed
(`fullgraph=False`), for TorchDynamo.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from jitlab.capture.names import METHOD_NAMES


class MethodUnavailable(Exception):
    """The method cannot be tried at all in this environment (not a capture failure of the case)."""


@dataclass
class Captured:
    """`graphs()`: graphs the method made over all calls; `graphs_per_call()`: graphs the last call
    ran (more than one: the program was split at graph breaks; 0: it ran eagerly), or None."""

    call: Callable[..., Any]
    owner: Any
    verdict: Callable[[], tuple[bool, str | None]] = field(default=lambda: (True, None))
    graphs: Callable[[], int | None] = field(default=lambda: None)
    graphs_per_call: Callable[[], int | None] = field(default=lambda: None)
    before_call: Callable[[], None] = field(default=lambda: None)  # the harness calls it before each call
    # kinds of the reasons it was not one graph (jitlab.jit.reasons), when the method reports them
    kinds: Callable[[], list[str] | None] = field(default=lambda: None)


class FunctionModule(torch.nn.Module):
    """A plain function as a Module, for tools that accept only modules (torch.export)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _eager(model: Any, args: tuple, kwargs: dict) -> Captured:
    return Captured(model, model)


def _jitlab(model: Any, args: tuple, kwargs: dict) -> Captured:
    try:
        from jitlab.jit import jit
    except ImportError as exc:
        raise MethodUnavailable("jitlab.jit not available") from exc
    compiled = jit(model, backend="eager")
    before: list[Any] = [[]]

    def snapshot() -> None:
        before[0] = _entry_counts(compiled)

    return Captured(
        compiled,
        model,
        verdict=lambda: jitlab_verdict(compiled.explain()),
        graphs=lambda: sum(g.graphs for g in compiled.explain().graphs),
        graphs_per_call=lambda: jitlab_graphs_this_call(compiled, before[0]),
        before_call=snapshot,
        kinds=lambda: list(dict.fromkeys(r.kind.value for r in compiled.explain().reasons)),
    )


def _entry_counts(compiled: Any) -> list[tuple[int, int]]:
    return [(e.fn.hits[0], sum(e.fn.deopts)) for e in compiled.entries]


def jitlab_graphs_this_call(compiled: Any, before: list[tuple[int, int]]) -> int:
    """Graphs the call just made ran: those of the cache entry that served it (or that it captured,
    which is what the next such call runs); 0 when it ran eagerly."""
    for i, entry in enumerate(compiled.entries):
        counts = (entry.fn.hits[0], sum(entry.fn.deopts))
        if i >= len(before) or counts != before[i]:
            return entry.graphs
    return 0


def jitlab_verdict(report: Any) -> tuple[bool, str | None]:
    """Whole-program graphs only: at least one graph, and no break (the JIT's `breaks` include
    specialising a graph on a data value, such as an `.item()` result), no fallback to eager, not
    disabled, and no call that missed a full cache and ran eagerly (a program that recaptures on every
    call). Recaptures after guard misses on outside values are allowed, as dynamo's recompiles."""
    graphs, breaks, fallbacks = len(report.graphs), len(report.breaks), len(report.fallbacks)
    if graphs >= 1 and not breaks and not fallbacks and not report.disabled and not report.eager_misses:
        return True, None
    note = f"{graphs} graph(s), {breaks} break(s), {fallbacks} fallback(s)"
    reasons = [report.disabled] if report.disabled else [*report.fallbacks, *report.breaks]
    if report.eager_misses and not reasons:
        full = f"cache limit reached ({graphs} entries): {report.eager_misses} call(s) missed every entry and ran eagerly"
        reasons = [f"{full}; {report.miss_reasons[0]}" if report.miss_reasons else full]
    return False, f"{note}: {reasons[0]}" if reasons else note


def _dynamo(model: Any, args: tuple, kwargs: dict) -> Captured:
    import torch._dynamo

    torch._dynamo.reset()
    graphs: list[torch.fx.GraphModule] = []

    def counting_eager(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
        graphs.append(gm)  # like backend="eager": run the captured graph as it is
        return gm.forward

    compiled = torch.compile(model, backend=counting_eager, fullgraph=True)

    def verdict() -> tuple[bool, str | None]:
        return (True, None) if graphs else (False, "dynamo made no graph: the program ran eagerly")

    return Captured(compiled, model, verdict=verdict, graphs=lambda: len(graphs))


def dynamo_graphs_per_call(model: Any, calls: list[tuple[tuple, dict]]) -> int:
    """Graphs TorchDynamo runs on the last of `calls` with graph breaks allowed (`fullgraph=False`):
    the partial graphs between its breaks, counted as they run (backend: the graph as it is)."""
    import torch._dynamo

    torch._dynamo.reset()
    runs = [0]

    def counting_eager(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            runs[0] += 1
            return gm.forward(*args)

        return run

    compiled = torch.compile(model, backend=counting_eager, fullgraph=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args, kwargs in calls:
            runs[0] = 0
            compiled(*args, **kwargs)
    return runs[0]


def _export(model: Any, args: tuple, kwargs: dict) -> Captured:
    module = model if isinstance(model, torch.nn.Module) else FunctionModule(model)
    program = torch.export.export(module, args, kwargs)
    exported = program.module()
    return Captured(exported, exported if module is model else model, graphs=lambda: 1)


def _fx(model: Any, args: tuple, kwargs: dict) -> Captured:
    traced = torch.fx.symbolic_trace(model)
    return Captured(traced, model, graphs=lambda: 1)


def _script(model: Any, args: tuple, kwargs: dict) -> Captured:
    scripted = torch.jit.script(model)
    return Captured(scripted, scripted if isinstance(model, torch.nn.Module) else model, graphs=lambda: 1)


def _trace(model: Any, args: tuple, kwargs: dict) -> Captured:
    if kwargs:  # torch.jit.trace takes either positional or keyword examples: bind all by name
        signature = inspect.signature(model.forward if isinstance(model, torch.nn.Module) else model)
        named = dict(signature.bind(*args, **kwargs).arguments)
        traced = torch.jit.trace(model, example_kwarg_inputs=named, check_trace=False)
    else:
        traced = torch.jit.trace(model, args, check_trace=False)
    return Captured(traced, traced if isinstance(model, torch.nn.Module) else model, graphs=lambda: 1)


METHODS: dict[str, Callable[[Any, tuple, dict], Captured]] = {
    "jitlab": _jitlab,
    "dynamo": _dynamo,
    "export": _export,
    "fx": _fx,
    "script": _script,
    "trace": _trace,
}
assert tuple(METHODS) == METHOD_NAMES, "jitlab/capture/names.py lists the methods in this order"


def warm_up(methods: list[str]) -> None:
    """Import what the methods need and capture a tiny function once with each, so that one-time
    costs (importing TorchDynamo and torch.export: seconds) are not charged to the first case."""
    import torch.export  # noqa: F401

    tiny = torch.ones(2)
    for method in methods:
        if method == "jitlab":
            continue  # nothing to warm up that is not part of its own first capture
        with contextlib.suppress(Exception):
            capture(method, torch.nn.Sigmoid(), (tiny,), {}).call(tiny)


def capture(method: str, model: Any, args: tuple, kwargs: dict) -> Captured:
    """Capture `model` with `method` (warnings of the tools are silenced: results say what failed)."""
    if method == "eager":
        return _eager(model, args, kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return METHODS[method](model, args, kwargs)
