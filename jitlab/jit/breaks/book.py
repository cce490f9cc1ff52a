"""Graph breaks: where a capture splits into several graphs instead of giving up on the whole call.

Two kinds of place split a capture (see docs/jit.md, "Graph breaks"):

- a **call break**: a call the interpreter cannot follow (a user function with bytecode it does not
  interpret, a library function calling user code back that no lookaside interprets, a module with
  backward hooks).
  On a hit the call runs natively, as an opaque step between two graphs, with its arguments taken
  from the graphs' outputs and the guarded outside objects; later reads of anything it could have
  changed (its result, the objects it was given, every outside value) are guarded again after it.
- a **data break**: Python code decides on a value read from tensor data (`if x.sum() > 0`,
  `.item()` in a condition) that cannot be checked before the graph runs (it depends on random
  numbers drawn by a graph that has effects). The graph is split where the value is made, the value
  is re-checked there on every hit, and a different value resumes the program from that point
  instead of starting over.

When a check after a break fails, the entry *deoptimises*: it rebuilds the interpreted frames as they
were at the break (resume.py) and runs the rest of the call from there, so every effect happens once
and in order. A place whose frames cannot be rebuilt (see `interpreter.resumption.break_site`) is no break: the capture then
falls back to eager execution as before.

`BreakTracer` and `BreakRecorder` (jitlab.jit.tracing.break_tracer, break_recorder) extend the tracer and the graph recorder with this
bookkeeping; `BreakBook` keeps it for one capture; `segments.py` turns it into the cache entry.
"""

from __future__ import annotations

import contextlib
import types
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
import torch.fx as fx

from jitlab.jit.breaks.call_site import called_from
from jitlab.jit.breaks.resume import LiveWriter, render_frames
from jitlab.jit.breaks.segment_guards import (
    LocalSource,
    SegmentGuardBuilder,
    global_guards,
)
from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.effects.replay import Effect, ReplayTracer, render_effects
from jitlab.jit.errors import Unsupported
from jitlab.jit.graph.data_values import Speculation
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import Source
from jitlab.jit.interpreter import Interpreter
from jitlab.jit.interpreter.resumption import ResumePoint, Where, break_site
from jitlab.jit.reasons import Reason, ReasonKind


@dataclass
class ResumeState:
    """The frames at a break, rendered for the deoptimisation path."""

    point: ResumePoint
    frames_expr: str
    prelude: list[str]


@dataclass
class Boundary:
    """A place where the entry's graph is split; `mark` counts the graph's operation nodes before it."""

    seq: int
    where: Where
    reason: Reason  # why the graph is split here, with its kind (what="graph break")
    mark: int
    effects: int  # number of effects recorded before it
    grad: bool  # grad mode at the boundary
    effectful: bool  # something irreversible happened before it (effects, mutation, random, a break)
    state: ResumeState | None = None
    state_problem: str | None = None


@dataclass
class CallBreak(Boundary):
    index: int = 0
    call_prelude: list[str] = field(default_factory=list)
    call_expr: str = ""
    grad_after: bool = True
    builder_after: SegmentGuardBuilder | None = None
    active_specs: frozenset[int] = frozenset()  # ids of the speculations active when it ran
    tensor_meta: dict[fx.Node, tuple] = field(default_factory=dict)  # tensors known before it
    # the call raised while capturing and the program caught it: the entry expects it to raise again
    # (its result is the exception, guarded by type); a call that returns instead deoptimises
    raised: bool = False

    @property
    def result(self) -> str:
        return f"b{self.index}"


@dataclass
class DataBreak(Boundary):
    spec: Speculation | None = None  # made by the graph recorder
    epoch: int = 0  # number of call breaks before it


class SegmentArrays(Protocol):
    """What the break book uses of the tracer's content guards on outside arrays (tracing's
    OutsideArrays): a break's call ends the segment that guarded them."""

    def check_outside_arrays(self) -> None: ...


class BreakingTracer(ReplayTracer, Protocol):
    """What the break book needs of the tracer (tracing's BreakTracer), besides rendering values
    (`ReplayTracer`): the current segment's guards and a new segment's, the capture's effects, the
    objects a break adopts or whose content it guards, the result of a break, and its counters."""

    in_break: int  # >0 while a break's call runs natively
    arrays: SegmentArrays  # content guards of the outside arrays native code read
    unseen_effects: bool  # code the capture cannot see ran: the call must not be run again

    @property
    def builder(self) -> SegmentGuardBuilder: ...

    @property
    def effects(self) -> list[Effect]: ...

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def adopt(self, obj: object, source: Source) -> None: ...

    def know_content(self, obj: object) -> None: ...

    def new_segment(self, builder: GuardBuilder) -> None: ...

    def track_result(self, value: object, source: Source) -> Any: ...

    def made_directly(self, spec: Speculation) -> bool: ...


class BookRecorder(Protocol):
    """What the break book and segments.py (through `BreakBook.recorder`) use of the graph recorder
    (tracing's BreakRecorder): the graph, its inputs, constants and active speculations, the tensors
    recorded and whether the graph has effects, noting a new segment, and its symbolic sizes.
    tests/jit/test_jit_owned_state.py checks that the real recorder has every member."""

    graph: fx.Graph
    placeholders: list[fx.Node]
    constants: dict[str, Any]
    node_of: dict[int, tuple[torch.Tensor, fx.Node]]
    has_mutation: bool
    has_random: bool
    size_problem: str | None

    @property
    def speculations(self) -> list[Speculation]: ...

    def pause(self) -> contextlib.AbstractContextManager[None]: ...

    def note_segment(self, segment: int) -> None: ...

    def has_symbols(self) -> bool: ...


class CaptureView(Protocol):
    """One capture's state as its collaborators read it (tracing's `Capture` is the one there is):
    the tracer, the book and the recorder are each made with the capture and reach the others
    through it. The recorder, book and interpreter are None until the capture has made them."""

    @property
    def guards(self) -> SegmentGuardBuilder: ...

    @property
    def side_effects(self) -> SideEffects: ...

    @property
    def tracer(self) -> BreakingTracer: ...

    @property
    def recorder(self) -> BookRecorder | None: ...

    @property
    def book(self) -> BreakBook | None: ...

    @property
    def interpreter(self) -> Interpreter | None: ...


class BreakBook:
    """Everything one capture knows about its breaks; read by segments.py when planning."""

    def __init__(self, capture: CaptureView) -> None:
        self.capture = capture
        self.calls: list[CallBreak] = []
        self.data: list[DataBreak] = []
        self.needed: dict[fx.Node, None] = {}  # graph values the entry's code reads (ordered set)
        self.var_at_read: dict[int, tuple[Any, str]] = {}
        # effect index -> (prelude, lines, graph nodes it reads)
        self.rendered: dict[int, tuple[list[str], list[str], list[fx.Node]]] = {}
        self._referenced: list[fx.Node] | None = None
        self.rendered_upto = 0
        self._seq = 0
        self.writer = self.new_writer("r", closures=False)
        # places that could not be breaks, each with the kind of the break it would have been (the
        # obstacle the user meets there); the capture's fallback lists them after its problems
        self.notes: list[Reason] = []

    # ------------------------------------------------------------ the capture's state
    @property
    def tracer(self) -> BreakingTracer:
        """The capture's hooks (tracing's BreakTracer)."""
        return self.capture.tracer

    @property
    def recorder(self) -> BookRecorder:
        """The capture's graph recorder (tracing's BreakRecorder), made before the book."""
        return self.capture.recorder  # type: ignore[return-value]

    @property
    def interp(self) -> Interpreter | None:
        """The interpreter running the capture."""
        return self.capture.interpreter

    # ------------------------------------------------------------ rendering
    @property
    def builder(self) -> SegmentGuardBuilder:
        return self.tracer.builder

    def node_name(self, node: fx.Node) -> str:
        if self._referenced is not None:
            self._referenced.append(node)
        if node.op == "placeholder":
            return node.meta["jit_var"]
        self.needed[node] = None
        return f"n_{node.name}"

    def resolve(self, value: object) -> str | None:
        """The variable of an outside object, as the program read it; None for other values."""
        tracer = self.tracer
        source = tracer.source_of(value)
        if source is None or tracer.is_fresh(value):
            return None
        known = self.var_at_read.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        return self.render_var(source)

    def render_var(self, source: Source) -> str:
        for builder in self.builder.chain():
            if builder.has_var(source):
                return builder.var(source)
        return self.builder.var(source)

    def new_writer(self, prefix: str, closures: bool = True) -> LiveWriter:
        return LiveWriter(_RenderBuilder(self), self.tracer, self.node_name, self.resolve, prefix, closures)

    def render_effects_upto(self, end: int) -> None:
        """Render effects [rendered_upto, end) one by one with the entry's writer (contents as now)."""
        effects = self.tracer.effects
        for index in range(self.rendered_upto, end):
            mark = len(self.writer.prelude)
            self._referenced = []
            try:
                lines = render_effects([effects[index]], self.writer)
            finally:
                nodes, self._referenced = self._referenced, None
            self.rendered[index] = (self.writer.prelude[mark:], lines, nodes)
        self.rendered_upto = max(self.rendered_upto, end)

    # ------------------------------------------------------------ places
    def mark(self) -> int:
        rec = self.recorder
        return len(rec.graph.nodes) - len(rec.placeholders)

    def effectful(self) -> bool:
        rec = self.recorder
        return bool(self.tracer.effects or rec.has_mutation or rec.has_random or self.calls)

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def render_state(self, point: ResumePoint, prefix: str) -> ResumeState:
        writer = self.new_writer(prefix)
        frames_expr = render_frames(list(self.interp.frames), writer)
        return ResumeState(point, frames_expr, writer.prelude)

    # ------------------------------------------------------------ call breaks
    def call_break(self, fn: object, args: tuple, kwargs: dict, reason: Reason) -> Any:
        """Run `fn(*args, **kwargs)` natively as a break; returns NO_BREAK when this cannot be one."""
        tracer, recorder = self.tracer, self.recorder
        where, point, problem = break_site(self.interp, "call")
        if problem is not None:
            self._no_break(reason, where, problem)
            return NO_BREAK
        index = len(self.calls)
        try:
            self.render_effects_upto(len(tracer.effects))
            mark = len(self.writer.prelude)
            site = called_from([(f.code, f.current_line(), f.globals) for f in self.interp.frames])
            call_expr = self._call_expr(site, fn, args, kwargs)
            call_prelude = self.writer.prelude[mark:]
            for obj, name in list(self.writer.memo.values()):
                tracer.adopt(obj, LocalSource(name))  # handed to (or reachable by) code we cannot see
            state = self.render_state(point, f"s{index}_")
        except Unsupported as exc:
            self._no_break(reason, where, exc.reason)
            return NO_BREAK
        brk = CallBreak(
            seq=self.next_seq(),
            where=where,
            reason=reason,
            mark=self.mark(),
            effects=len(tracer.effects),
            grad=torch.is_grad_enabled(),
            effectful=self.effectful(),
            state=state,
            index=index,
            call_prelude=call_prelude,
            call_expr=call_expr,
            active_specs=frozenset(id(s) for s in recorder.speculations),
        )
        with recorder.pause():
            metas = {
                node: (tuple(t.shape), t.stride(), t.dtype, t.device, t.requires_grad, type(t))
                for t, node in recorder.node_of.values()
                if isinstance(t, torch.Tensor) and node.op != "get_attr"
            }
        tracer.in_break += 1
        tracer.arrays.check_outside_arrays()  # what the program wrote before the break, not what the call does
        tracer.unseen_effects = True  # whatever it does, the call must not be run again after it
        raised: Exception | None = None
        try:
            with recorder.pause():
                result = site(fn, args, kwargs)
        except Exception as exc:  # the program may catch it: the entry expects the same exception
            raised = result = exc
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: no entry expects those
            tracer.problem(
                f"the call at {where} raised {type(exc).__name__} while capturing", ReasonKind.USER_EXCEPTION
            )
            raise
        finally:
            tracer.in_break -= 1
        brk.raised = raised is not None
        self.calls.append(brk)
        brk.grad_after = torch.is_grad_enabled()
        known_before = dict(recorder.node_of)
        brk.tensor_meta = metas
        builder = SegmentGuardBuilder(index + 1, tracer.builder)
        builder.known = lambda t: self._known_tensor(known_before, t)
        brk.builder_after = builder
        global_guards(builder)
        tracer.new_segment(builder)
        recorder.note_segment(index + 1)
        out = tracer.track_result(result, LocalSource(brk.result))
        for obj, _name in list(self.writer.memo.values()):
            if type(obj) in (list, dict, set) or plain_object_like(obj):
                tracer.know_content(obj)  # what the break left in it, guarded right after it
        if raised is not None:
            raise raised  # to the program's own handler (or out of the call, which is then not cached)
        return out

    def _no_break(self, reason: Reason, where: Where, problem: str) -> None:
        """Note a call that could not be a break. Its kind is the break's: what kept the call from the
        graph is the call (the problem only says why jitlab.jit could not split the graph there)."""
        self.notes.append(
            Reason(reason.kind, f"{reason.message} at {where}: no graph break there ({problem})")
        )

    def _known_tensor(self, known_before: dict[int, Any], tensor: torch.Tensor) -> str | None:
        entry = known_before.get(id(tensor))
        if entry is None or entry[0] is not tensor:
            return None
        node = entry[1]
        if node.op == "placeholder":
            return node.meta.get("jit_var0") or node.meta["jit_var"]
        return self.node_name(node)

    def _call_expr(self, site: object, fn: object, args: tuple, kwargs: dict) -> str:
        """`site(fn, (args...), {kwargs...})`: the break's call from the user's line (call_site.py)."""
        w = self.writer
        positional = "".join(f"{w.write(a)}, " for a in args)
        keywords = ", ".join(f"{k!r}: {w.write(v)}" for k, v in kwargs.items())
        return f"{w.const(site, 'SITE')}({w.write(fn)}, ({positional}), {{{keywords}}})"

    # ------------------------------------------------------------ data breaks
    def data_site(self, spec: Speculation) -> None:
        """A speculation was just made: remember where, and the frames if it may need them."""
        where, point, problem = break_site(self.interp, None)
        if problem is None and not self.tracer.made_directly(spec):
            problem = "the value is read inside code jitlab.jit does not interpret"
        brk = DataBreak(
            seq=self.next_seq(),
            where=where,
            reason=Reason(
                ReasonKind.DATA_DEPENDENT, f"Python decides on tensor data: {spec.text}", what="graph break"
            ),
            mark=self.mark(),
            effects=len(self.tracer.effects),
            grad=torch.is_grad_enabled(),
            effectful=self.effectful(),
            spec=spec,
            epoch=len(self.calls),
        )
        if problem is not None:
            brk.state_problem = problem
        elif brk.effectful:
            try:
                brk.state = self.render_state(point, f"d{len(self.data)}_")
            except Unsupported as exc:
                brk.state_problem = exc.reason
        self.data.append(brk)


def plain_object_like(value: object) -> bool:
    """An instance of a Python class with its attributes in `__dict__` (not a function or module)."""
    cls = type(value)
    return (
        type(cls) is type
        and hasattr(value, "__dict__")
        and not isinstance(
            value, (types.FunctionType, types.MethodType, types.ModuleType, types.BuiltinFunctionType)
        )
        and cls.__module__ != "builtins"
    )


class _RenderBuilder:
    """What `LiveWriter` and `render_effects` see as the builder: shared constants, and for sources
    the variable that already holds them (in this segment or an earlier one)."""

    def __init__(self, book: BreakBook) -> None:
        self._book = book

    def const(self, value: object, hint: str = "C") -> str:
        return self._book.builder.const(value, hint)

    def var(self, source: Source) -> str:
        return self._book.render_var(source)

    def has_var(self, source: Source) -> bool:
        return True


class _NoBreak:
    __slots__ = ()


NO_BREAK = _NoBreak()  # what `call_break` returns where no break can be made
