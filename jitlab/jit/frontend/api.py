"""`jit(fn_or_module, backend)`: the public entry point and the per-call path.

The hit path is: for each cache entry, call its generated function (guards -> graph -> replay);
the first result that is not MISS is returned. On a miss the call is captured (which also computes
its result), the capture becomes a new entry, and the backend compiles its graph.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import logging
import time
import types
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn

from jitlab.errors import UserError
from jitlab.jit.entries.branches import NoMerge, merge_branches
from jitlab.jit.entries.codegen import EntryFunction, build_entry
from jitlab.jit.entries.plans import MISS, EntryPlan
from jitlab.jit.frontend.backends import Backend, check_backend, compile_graph
from jitlab.jit.frontend.cache import Cache, CacheEntry
from jitlab.jit.frontend.driver import CaptureOutcome, EagerRerun, capture
from jitlab.jit.frontend.explain import BreakReport, Explanation, GraphReport
from jitlab.jit.frontend.failsafe import (
    FailedCapture,
    describe,
    raised_in_jitlab,
    without_capture_notes,
)
from jitlab.jit.frontend.misses import MissLog
from jitlab.jit.frontend.output_layout import keep_eager_layout
from jitlab.jit.graph.autocast_nodes import contained as autocast_contained
from jitlab.jit.graph.autocast_nodes import has_autocast_nodes, unwinding
from jitlab.jit.graph.shape_history import ShapeHistory
from jitlab.jit.interpreter.core import USER_FRAMES_ATTR
from jitlab.jit.python_support import check_python
from jitlab.jit.reasons import Reason, ReasonKind, combined
from jitlab.jit.tracing.jitted import Jitted

log = logging.getLogger("jitlab.jit")

DEOPT_LIMIT = 8  # calls resumed from a graph break before an entry that keeps failing is given up
DIAGNOSED_IN_A_ROW = 8  # misses in a row whose failed guards are found (misses.py); later ones are counted


def user_frames_note(frames: list[tuple[str, int, str]]) -> str:
    """Traceback-style lines for the interpreted frames an exception passed, outermost first."""
    lines = ["raised in code run by jitlab.jit (most recent call last):"]
    for filename, lineno, name in reversed(frames):
        lines.append(f'  File "{filename}", line {lineno}, in {name}')
        source = linecache.getline(filename, lineno).strip()
        if source:
            lines.append(f"    {source}")
    return "\n".join(lines)


class JitFunction(Jitted):
    """A callable that behaves like the original function, running captured graphs when it can."""

    def __init__(self, fn: Callable[..., Any], backend: Backend, max_entries: int = 8) -> None:
        self._fn = fn
        self._backend = backend
        self._cache = Cache(max_entries=max_entries)
        self._miss_log = MissLog()
        self._history = ShapeHistory()
        self._captures = 0
        self._first_call_retries = 0
        self._fns: list[EntryFunction] = []  # the entries' generated functions, most recently used first
        self._eager = False
        self._miss_seconds = 0.0  # time in calls that missed: capture, compile, and the call itself
        if isinstance(fn, (types.FunctionType, types.MethodType)):
            # `inspect.signature(fast)` is the function's: `model.forward = jit(model.forward)` is then
            # called by transformers' `generate` with the keywords the forward takes, as eager code is
            functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args: object, **kwargs: object) -> Any:
        if self._eager:
            return self._fn(*args, **kwargs)
        fns = self._fns
        for fn in fns:
            try:
                out = fn(args, kwargs)
            except Exception as exc:
                failed = (fn, exc)
                break
            if out is not MISS:
                if fn is not fns[0]:  # the entry that served comes first next time (_promote)
                    self._promote(fn)
                return out
        else:
            failed = None
        if failed is not None:  # outside the except clause: eager's own exception is not chained to it
            return self._entry_failed(*failed, args, kwargs)
        started = time.perf_counter()
        try:
            return self._miss(args, kwargs)
        except BaseException as exc:
            frames = exc.__dict__.pop(USER_FRAMES_ATTR, None) if hasattr(exc, "__dict__") else None
            if not frames:
                raise
            suspect = raised_in_jitlab(exc) and not isinstance(exc, UserError)
            without_capture_notes(exc, USER_FRAMES_ATTR)
            if suspect:
                # the capture had effects, so it was not run again eagerly to tell (failsafe.py)
                exc.add_note(
                    f"jitlab.jit: raised in jitlab.jit's own code ({describe(exc)}) after the call had "
                    "effects, so it was not run again eagerly; if eager execution does not raise it, it is "
                    "a bug in jitlab.jit"
                )
            # The user's own exception, raised in interpreted code: drop the interpreter's frames from
            # the traceback and name the user's lines instead (they were never Python frames).
            exc.add_note(user_frames_note(frames))
            raise exc.with_traceback(None)  # noqa: B904 -- the same exception, not a new one
        finally:
            self._miss_seconds += time.perf_counter() - started

    def _promote(self, fn: EntryFunction) -> None:
        """Check the entry that just served first from the next call on (most recently used first,
        as CPython's frame evaluation cache of TorchDynamo does). Every entry's guards are complete,
        so the order decides only how much checking a call costs, never which result it gets: while
        `generate` decodes, the decode step's entry, captured after the prefill ones, is then the
        first checked instead of the last, and the entries before it no longer fail their guards on
        every token. `explain()` keeps numbering entries in capture order (`Cache.entries`)."""
        # a new list, not a change of the one a call in another thread may be going through
        self._fns = [fn, *(other for other in self._fns if other is not fn)]

    def _miss(self, args: tuple, kwargs: dict) -> Any:
        cache = self._cache
        if cache.entries:
            cache.note_miss()
            if cache.misses_in_a_row <= DIAGNOSED_IN_A_ROW:
                self._miss_log.record(cache.entries, args, kwargs)
        if cache.full():  # keep the entries that hit; this call runs eagerly (cache.py)
            if cache.starved():
                self._disable(
                    Reason(
                        ReasonKind.CACHE_LIMIT,
                        f"cache limit reached ({cache.max_entries} entries) and the last "
                        f"{cache.misses_in_a_row} calls missed every entry; the guards that failed: "
                        f"{self._miss_log.summary()}",
                    )
                )
            else:
                cache.eager_misses += 1
            return self._fn(*args, **kwargs)
        self._captures += 1
        try:
            with autocast_contained():  # runs of the graph on fake tensors while planning
                outcome = capture(
                    self._fn,
                    args,
                    kwargs,
                    lazy=self._backend == "eager",
                    history=self._history,
                    compiled=self._backend != "eager",
                    symbolic_ints=isinstance(self._backend, str) and self._backend != "eager",
                )
        except EagerRerun as stop:
            self._disable(Reason(stop.reason.kind, f"unsupported: {stop.reason.message}"))
            rerun = None
        except FailedCapture as failed:
            without_capture_notes(failed.error, USER_FRAMES_ATTR)
            rerun = failed.error
        else:
            rerun = False
        if rerun is not False:  # outside the except clauses: eager's exception is not chained to them
            value = self._fn(*args, **kwargs)  # raises: the program's own exception, as eager has it
            if rerun is not None:
                self._disable(
                    Reason(
                        ReasonKind.INTERNAL,
                        f"internal error in jitlab.jit during capture, the call ran eagerly: {describe(rerun)}",
                    )
                )
            return value
        for label, shape, dims in outcome.inputs:
            self._history.record(label, shape, dims)
        if outcome.redo_with_constant_ints:
            return outcome.value  # the next call is captured again with those ints constant
        if outcome.plan is None:
            if outcome.first_call_only and self._first_call_retries < 2:
                # e.g. lazy modules initialising their parameters: the next call is captured again
                self._first_call_retries += 1
                return outcome.value
            self._disable(combined(outcome.problems))
            return outcome.value
        plan = outcome.plan
        if self._merge_branches(plan, outcome):
            return outcome.value
        notes = []
        compiled = {}
        for graph in plan.graphs:
            try:
                with torch.no_grad() if plan.inference else contextlib.nullcontext(), autocast_contained():
                    compiled[graph.name] = self._eager_layout(
                        graph.gm,
                        compile_graph(
                            graph.gm,
                            graph.example_inputs,
                            self._backend,
                            plan.shape,
                            graph.fake_inputs,
                            notes,
                        ),
                    )
            except Exception as exc:  # a compiler failure must not fail the user's program
                note = f"backend failed ({type(exc).__name__}: {exc}); running the graph eagerly"
                log.warning("jitlab.jit: %s", note)
                notes.append(note)
                compiled[graph.name] = graph.gm.forward
            if has_autocast_nodes(graph.gm.graph):  # a region left open by a graph that raised is closed
                compiled[graph.name] = unwinding(compiled[graph.name])
        try:
            entry_fn = build_entry(plan, compiled, self._on_deopt, as_is=self._backend == "eager")
        except Exception as exc:  # the call's result is already right; only caching is lost
            self._disable(
                Reason(
                    ReasonKind.INTERNAL,
                    f"internal error building the cache entry: {type(exc).__name__}: {exc}",
                )
            )
            return outcome.value
        self._fns.append(entry_fn)
        guards = list(plan.guards)
        if plan.shape is not None:
            placed = plan.shape.placed_guards(compiled=self._backend != "eager")
            guards += [(f"after break {k - 1}: " if k else "") + f"SHAPE: {g}" for k, g in placed]
        cache.add(
            CacheEntry(
                fn=entry_fn,
                source="\n".join(plan.source_lines),
                guards=guards,
                graph_code="\n".join(g.gm.code for g in plan.graphs),
                node_count=sum(len(g.gm.graph.nodes) for g in plan.graphs),
                op_count=outcome.op_count,
                speculations=plan.speculations,
                speculation_sites=plan.speculation_sites,
                checks=plan.checks,
                effects=plan.effects,
                backend_note="; ".join(dict.fromkeys(notes)) or None,
                notes=outcome.notes,
                graphs=len(plan.graphs),
                breaks=list(plan.breaks),
                symbolic=_symbolic_sizes(plan),
                shape_note=plan.shape_note,
                plan=plan if plan.branch_problem is None and plan.speculation_objects else None,
                rerun_safe=plan.rerun_safe,
                miss_texts=plan.miss_texts,
                size_pins=list(plan.shape.pinned) if plan.shape is not None else [],
            )
        )
        return outcome.value

    def _entry_failed(self, fn: Callable[..., Any], exc: Exception, args: tuple, kwargs: dict) -> Any:
        """A cache entry raised: when it changed nothing the caller sees before raising, the call runs
        again eagerly; if eager raises too, that is the program's own exception (it propagates and the
        JIT stays on); if eager returns, the entry was wrong: fall back to eager for good (failsafe.py)."""
        entry = next((e for e in self._cache.entries if e.fn is fn), None)
        if entry is None or not entry.rerun_safe:
            raise exc
        value = self._fn(*args, **kwargs)
        self._disable(
            Reason(
                ReasonKind.INTERNAL,
                f"internal error in jitlab.jit running a cache entry, the call ran eagerly: {describe(exc)}",
            )
        )
        return value

    def _eager_layout(self, gm: fx.GraphModule, compiled: Callable[..., Any]) -> Callable[..., Any]:
        """A compiler's outputs laid out as eager's (output_layout.py); the eager backend runs the
        recorded operations themselves, which lay them out as eager does."""
        return compiled if self._backend == "eager" else keep_eager_layout(gm, compiled)

    def _merge_branches(self, plan: EntryPlan, outcome: CaptureOutcome) -> bool:
        """Whether the new plan, specialised on the other outcome of a branch than an entry's, was
        merged with it into one graph running both (branches.py); the entry is then replaced."""
        for index, entry in enumerate(self._cache.entries):
            if entry.plan is None or not entry.plan.speculation_objects:
                continue
            try:
                merged, note = merge_branches(entry.plan, plan, compiled=self._backend != "eager")
            except NoMerge:
                continue
            except Exception as exc:  # a bug in merging must only keep the two entries apart
                log.warning(
                    "jitlab.jit: internal error merging two branches: %s: %s", type(exc).__name__, exc
                )
                continue
            graph = merged.graphs[0]
            try:
                compiled = self._eager_layout(
                    graph.gm, compile_graph(graph.gm, graph.example_inputs, self._backend)
                )
            except Exception as exc:  # e.g. an arm returns a view torch.cond refuses: keep both entries
                log.info("jitlab.jit: the merged graph does not compile: %s: %s", type(exc).__name__, exc)
                continue
            try:
                entry_fn = build_entry(
                    merged, {graph.name: compiled}, self._on_deopt, as_is=self._backend == "eager"
                )
            except Exception as exc:  # keep the two entries apart
                log.warning(
                    "jitlab.jit: internal error building a merged entry: %s: %s", type(exc).__name__, exc
                )
                continue
            self._fns[self._fns.index(entry.fn)] = entry_fn
            self._miss_log.forget(entry)
            self._cache.entries[index] = CacheEntry(
                fn=entry_fn,
                source="\n".join(merged.source_lines),
                guards=list(entry.guards),
                graph_code=graph.gm.code,
                node_count=len(graph.gm.graph.nodes),
                op_count=max(entry.op_count, outcome.op_count),
                speculations=merged.speculations,
                speculation_sites=merged.speculation_sites,
                checks=merged.checks,
                effects=merged.effects,
                backend_note=None,
                notes=[*entry.notes, note],
                graphs=1,
                plan=merged,
                miss_texts=merged.miss_texts,
            )
            return True
        return False

    def _on_deopt(self, entry_fn: EntryFunction, index: int) -> None:
        """A check after a graph break failed and the call resumed from the break: if that keeps
        happening more often than whole hits, run eagerly from now on (resuming is slow)."""
        total = sum(entry_fn.deopts)
        if total >= DEOPT_LIMIT and total > entry_fn.hits[0] and not self._eager:
            entry = next(e for e in self._cache.entries if e.fn is entry_fn)
            brk = entry.breaks[index]
            # the kind of the break itself: what changes from call to call is what the break is about
            self._disable(
                Reason(
                    brk.reason.kind,
                    f"the checks after the graph break at {brk.where} kept failing ({total} calls resumed "
                    f"from a break, {entry_fn.hits[0]} ran whole)",
                )
            )

    def _disable(self, reason: Reason) -> None:
        """Run eagerly from now on, for `reason` (its kind, and its file:line when known)."""
        self._cache.disable(reason)
        self._eager = True
        log.info("jitlab.jit: %s falls back to eager: %s", self._name, reason.message)

    @property
    def _name(self) -> str:
        return getattr(self._fn, "__qualname__", None) or type(self._fn).__name__

    def explain(self) -> Explanation:
        """What was captured: graphs with node counts, guards, speculations, effects, fallbacks."""
        c = self._cache
        return Explanation(
            name=self._name,
            graphs=tuple(
                GraphReport(
                    node_count=e.node_count,
                    op_count=e.op_count,
                    guards=tuple(e.guards),
                    speculations=tuple(e.speculations),
                    speculation_sites=tuple(e.speculation_sites),
                    checks=tuple(e.checks),
                    effects=tuple(e.effects),
                    hits=e.fn.hits[0],
                    code=e.graph_code,
                    backend_note=e.backend_note,
                    notes=tuple(e.notes),
                    graphs=e.graphs,
                    symbolic_sizes=tuple(e.symbolic),
                    shape_note=e.shape_note,
                    size_pins=tuple(e.size_pins),
                    breaks=tuple(
                        BreakReport(
                            kind=b.kind,
                            reason=b.reason.message,
                            reason_kind=b.reason.kind,
                            filename=b.where.filename,
                            lineno=b.where.lineno,
                            function=b.where.function,
                            deopts=e.fn.deopts[b.index],
                        )
                        for b in e.breaks
                    ),
                )
                for e in c.entries
            ),
            captures=self._captures,
            misses=c.misses,
            miss_reasons=self._miss_log.grouped(),
            last_misses=tuple(self._miss_log.last),
            eager_misses=c.eager_misses,
            fallback_reasons=tuple(c.fallbacks),
            disabled=c.disabled,
            miss_seconds=self._miss_seconds,
            source=_source_of(self._fn),
        )

    @property
    def entries(self) -> list[CacheEntry]:
        return self._cache.entries


def _source_of(fn: object) -> tuple[str, int] | None:
    """(file, first line) of the jitted function, or of a module's `forward`; None when unknown."""
    code = getattr(getattr(fn, "forward", fn), "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else None


def _symbolic_sizes(plan: EntryPlan) -> list[str]:
    """`args[0] (*, 8)`: each input with symbolic sizes, for the explanation."""
    return list(plan.shape.described) if plan.shape is not None else []


class JitModule(JitFunction):
    """`jit(module)`: calls go through the JIT, other attributes reach the module (also `.module`)."""

    def __init__(self, module: nn.Module, backend: Backend, max_entries: int = 8) -> None:
        super().__init__(module, backend, max_entries)

    @property
    def module(self) -> nn.Module:
        return self._fn

    def forward(self, *args: object, **kwargs: object) -> Any:
        return self(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._fn, name)

    def __setattr__(self, name: str, value: object) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._fn, name, value)  # e.g. `fast.scale = 2.0` changes the module (guards see it)

    def __repr__(self) -> str:
        return f"jit({self._fn!r})"


def jit(fn_or_module: object, backend: Backend = "inductor", *, max_entries: int = 8) -> Any:
    """Compile a Python function or `nn.Module` by monitoring its execution (MagPy-style).

    Returns a callable behaving like the original: the first call is interpreted and captured into a
    torch.fx graph with guards; later calls whose guards pass run the compiled graph and replay the
    side effects. See docs/jit.md.
    """
    check_python()
    check_backend(backend)
    if type(max_entries) is not int or max_entries < 1:
        raise UserError(f"max_entries must be a positive integer, not {max_entries!r}")
    if isinstance(fn_or_module, nn.Module):
        return JitModule(fn_or_module, backend, max_entries)
    if isinstance(fn_or_module, (JitFunction, JitModule)):
        raise UserError(
            "this callable is already compiled by jitlab.jit: pass the original function or module"
        )
    if isinstance(fn_or_module, (types.FunctionType, types.MethodType)):
        return JitFunction(fn_or_module, backend, max_entries)
    raise UserError(
        f"jitlab.jit expects a Python function or a torch.nn.Module, not {type(fn_or_module).__name__}: "
        "wrap the call in a function"
    )
