"""One capture: run the call under the interpreter with the tracer and the graph recorder.

The capture *is* the call: its result (or exception) is what the user gets, so it must be a faithful
execution. What it produces for later calls is an `EntryPlan`, or the reasons why none can be made.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.breaks.book import BreakBook
from jitlab.jit.breaks.segment_guards import GLOBAL_HOOK_DICTS, SegmentGuardBuilder
from jitlab.jit.breaks.segment_guards import global_guards as _global_guards
from jitlab.jit.breaks.segments import has_data_breaks, needs_segments, plan_segments
from jitlab.jit.entries.codegen import plan_entry
from jitlab.jit.entries.plans import EntryPlan
from jitlab.jit.errors import Unsupported
from jitlab.jit.frontend.failsafe import FailedCapture, describe
from jitlab.jit.graph.dynamic_ints import keep_ints_constant
from jitlab.jit.graph.plain import plain_ints
from jitlab.jit.graph.shape_history import ShapeHistory
from jitlab.jit.graph.training_nodes import has_host_nodes, training_parts
from jitlab.jit.guards.sources import ArgsSource, AttrSource, ConstSource, ItemSource, KwargsSource
from jitlab.jit.reasons import Reason, ReasonKind
from jitlab.jit.tracing.break_recorder import BreakRecorder
from jitlab.jit.tracing.break_tracer import BreakTracer
from jitlab.jit.tracing.capture_state import Capture


@dataclass
class CaptureOutcome:
    """What a capture produced: the call's value, and a plan or the reasons there is none."""

    value: object = None
    plan: EntryPlan | None = None
    problems: list[Reason] = field(default_factory=list)  # each with its kind and, when known, its line
    op_count: int = 0
    notes: list[str] = field(default_factory=list)  # how parts of the call were captured (explain)
    # the problems may be one-time initialisation (lazy parameters, or a call that set an attribute
    # it had read, as a data-aware initialisation's `self.initialized = True` does): the next call
    # may take another path, so it is captured again (twice at most, api.py)
    first_call_only: bool = False
    inputs: list[tuple[str, tuple[int, ...], frozenset[int]]] = field(
        default_factory=list
    )  # label, shape, dims
    # ints made symbolic inputs of a compiled graph with host operations: not cached; the next call
    # is captured again with these places constant (graph/dynamic_ints.keep_ints_constant)
    redo_with_constant_ints: list[str] = field(default_factory=list)


class EagerRerun(Exception):
    """The capture stopped before any visible effect; the caller runs the call eagerly. `reason`: why
    (the `Unsupported` that stopped it, with its kind)."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.message)
        self.reason = reason


def capture(
    target: Callable[..., Any],
    args: tuple,
    kwargs: dict,
    lazy: bool = False,
    history: ShapeHistory | None = None,
    compiled: bool = False,
    symbolic_ints: bool = False,
) -> CaptureOutcome:
    """Run `target(*args, **kwargs)` under the monitor. User exceptions propagate unchanged.

    `lazy` (for graphs run as they are, not compiled for static shapes): data-dependent floats and
    shapes stay inside the graph and are only re-checked when Python code reads them. `history`:
    the input sizes of earlier captures; sizes that changed since are made symbolic (shapes.py).
    `compiled`: the graph will be compiled (not run as it is), which lets a graph that runs entirely
    without gradients be compiled for inference (codegen.inference_graph). `symbolic_ints`: a named
    compiler gets the ints read from tensor data as unbacked symbols (graph/compiled_ints.py); a
    callable backend is not handed them (it could take the value as a constant).
    """
    if history is not None:
        history.begin_call(args, kwargs)
    state = Capture(lazy=lazy, history=history)
    state.recorder.symbolic_ints = symbolic_ints
    builder, tracer, recorder, book = state.guards, state.tracer, state.recorder, state.book
    _global_guards(builder)
    builder.check(ArgsSource(), f"len({{v}}) == {len(args)}", f"len({{v}}) == {len(args)}")
    if kwargs:
        builder.expr(KwargsSource(), "sorted({v})", sorted(kwargs))
    else:
        builder.check(KwargsSource(), "not {v}", "no keyword arguments")
    import torch.nn.modules.module as module_mod

    if any(getattr(module_mod, n, None) for n in GLOBAL_HOOK_DICTS):
        tracer.problem("global module hooks are registered", ReasonKind.GLOBAL_STATE)
    root = target
    owner = target.__self__ if isinstance(target, types.MethodType) else target
    if isinstance(owner, nn.Module) or owner is not target:
        root_source = ConstSource(builder.const(owner, "M"), "self")
        tracer._sources[id(owner)] = (owner, root_source)
        if isinstance(owner, nn.Module):
            tracer._modules.append((owner, root_source))
    with recorder:
        previous = sys.getprofile()
        try:
            # a float argument that changed since an earlier capture is a graph input: the program
            # gets the value the graph knows (dynamic_scalars.py)
            args = tuple(
                tracer.track_read(value, ItemSource(ArgsSource(), i)) for i, value in enumerate(args)
            )
            kwargs = {
                key: tracer.track_read(value, ItemSource(KwargsSource(), key))
                for key, value in kwargs.items()
            }
            interp = state.interpret()
            sys.setprofile(tracer.profile)
            value = interp.call(root, args, kwargs)
        except Unsupported as exc:
            _plain_ints_written(tracer.side_effects.places_written, recorder)
            if tracer.effects or recorder.has_mutation or recorder.has_random:
                raise RuntimeError(
                    f"jitlab.jit stopped in the middle of a call that already had effects: {exc.reason}"
                ) from None
            raise EagerRerun(exc.as_reason()) from None
        except Exception as exc:
            # what the program wrote stays, as plain ints
            _plain_ints_written(tracer.side_effects.places_written, recorder)
            if _had_effects(tracer, recorder):
                raise  # running the call again would repeat its effects: the exception is the result
            raise FailedCapture(exc) from None  # the caller asks eager execution (failsafe.py)
        except BaseException:  # KeyboardInterrupt, SystemExit: what the program wrote stays, as plain ints
            _plain_ints_written(tracer.side_effects.places_written, recorder)
            raise
        finally:
            sys.setprofile(previous)
    try:
        outcome = _outcome(tracer, recorder, builder, book, value, root, compiled)
    except Exception as exc:  # the call's result is right: a bug here only loses the cache entry
        problem = Reason(ReasonKind.INTERNAL, f"internal error after the call: {describe(exc)}")
        outcome = CaptureOutcome(value=value, problems=[problem])
    outcome.value = plain_ints(value)
    _plain_ints_written(tracer.side_effects.places_written, recorder)
    return outcome


def _had_effects(tracer: BreakTracer, recorder: BreakRecorder) -> bool:
    """Whether the call so far did something the caller can see: then it must not run again."""
    # code run natively out of the capture's sight (a user function, a graph break's call) may have
    # changed anything; library code's own effects are not seen
    return bool(
        tracer.effects
        or recorder.has_mutation
        or recorder.has_random
        or tracer.unseen_effects
        or tracer.arrays.changed_outside_arrays()
    )


def _set_what_it_read(tracer: BreakTracer) -> bool:
    """Whether the call set an attribute it had read (and guarded) before, as a data-aware
    initialisation sets its `self.initialized` flag: the next call may take another path."""
    builders = {id(b): b for b in (tracer.capture.guards, tracer.builder)}.values()
    for kind, holder, name in tracer.side_effects.places_written:
        if kind != "attr" or type(holder) is types.CellType or type(name) is not str:
            continue
        source = tracer.source_of(holder)
        if source is not None and any(b.has_var(AttrSource(source, name)) for b in builders):
            return True
    return False


def _outcome(
    tracer: BreakTracer,
    recorder: BreakRecorder,
    builder: SegmentGuardBuilder,
    book: BreakBook,
    value: object,
    root: Callable[..., Any],
    compiled: bool,
) -> CaptureOutcome:
    """The plan for later calls from a finished capture, or the reasons there is none."""
    tracer.arrays.check_outside_arrays()  # the call's last segment ends here
    tracer.call_objects.guard_call_objects()  # distinct objects of the arguments (call_objects.py)
    # effects' arguments frozen when they happened: drop clones nothing needed (before any rendering)
    tracer.freezer.settle(erase=not needs_segments(book), boundaries=[*book.calls, *book.data])
    outcome = CaptureOutcome(
        value=value,
        problems=list(tracer.problems),
        op_count=recorder.op_count,
        notes=list(
            dict.fromkeys(
                [
                    *tracer.notes,
                    *filter(None, [training_parts(recorder.graph, recorder.grads.backward_lines)]),
                ]
            )
        ),
        first_call_only=tracer.initialising or _set_what_it_read(tracer),
    )
    outcome.inputs = [
        (n.meta["jit_label"], tuple(n.meta["example_value"].shape), recorder.symbolic.get(n, frozenset()))
        for n in recorder.placeholders
        if "jit_label" in n.meta and isinstance(n.meta.get("example_value"), torch.Tensor)
    ]
    if not outcome.problems and compiled and has_host_nodes(recorder.graph):
        outcome.redo_with_constant_ints = keep_ints_constant(recorder)
        if outcome.redo_with_constant_ints:
            return outcome
    if not outcome.problems:
        try:
            if needs_segments(book):
                outcome.plan = plan_segments(book, value, compiled)
            else:
                try:
                    outcome.plan = plan_entry(tracer, recorder, builder, value, root, compiled)
                except Unsupported:
                    if not has_data_breaks(book):
                        raise
                    # a decision on tensor data that cannot be checked before the graph runs (it
                    # depends on random numbers the graph draws): split the graph there instead
                    outcome.plan = plan_segments(book, value, compiled)
        except Unsupported as exc:
            outcome.problems.append(exc.as_reason())
        except Exception as exc:  # the call's result is right; a bug in planning only loses the cache entry
            outcome.problems.append(
                Reason(
                    ReasonKind.INTERNAL,
                    f"internal error planning the cache entry: {type(exc).__name__}: {exc}",
                )
            )
        if tracer.problems and not outcome.problems:
            outcome.problems = list(tracer.problems)
    if outcome.problems:
        outcome.plan = None
        known = {p.message for p in outcome.problems}
        outcome.problems += [n for n in book.notes if n.message not in known]
    return outcome


def _plain_ints_written(writes: list[tuple[str, Any, Any]], recorder: BreakRecorder) -> None:
    """After the capture (returned or raised), the outside places the program wrote hold plain ints,
    as after eager code. Nothing to do when the capture made no DataInt."""
    if not recorder.made_data_ints():
        return
    for kind, holder, key in writes:
        try:
            if kind == "owner":
                plain_ints(holder)
            elif kind == "attr":
                value = getattr(holder, key)
                plain = plain_ints(value)
                if plain is not value:
                    setattr(holder, key, plain)
            else:
                value = holder[key]
                plain = plain_ints(value)
                if plain is not value:
                    holder[key] = plain
        except Exception:  # noqa: S112 - the place was deleted or changed later in the call: nothing to do
            continue
