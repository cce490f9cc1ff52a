"""`Capture`: the state of one capture, with one owner.

A capture is run by several collaborators: the interpreter's hooks (`BreakTracer`), the graph
recorder (`BreakRecorder`), the break book (`BreakBook`) and the guards of the current segment. Each
of them holds this object and reads the others through it (`tracer.recorder`, `recorder.book`,
`book.interp` are properties over it), so nothing is wired across them by assignment. It owns the
pending writes too (`side_effects`, jitlab.jit.effects.pending): every side effect on an outside
object, in program order, and what each write means for later reads.
"""

from __future__ import annotations

from jitlab.jit.breaks.book import BreakBook
from jitlab.jit.breaks.segment_guards import SegmentGuardBuilder
from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.effects.replay import Effect
from jitlab.jit.graph.shape_history import ShapeHistory
from jitlab.jit.interpreter import Interpreter
from jitlab.jit.tracing.break_recorder import BreakRecorder
from jitlab.jit.tracing.break_tracer import BreakTracer


class Capture:
    """The state of one capture: `guards` (segment 0's guard builder; a break opens the next
    segment's), `tracer` (the hooks), `recorder`, `book`, `side_effects` (and its `effects`) and, once the call runs,
    `interpreter`.

    `lazy`: data-dependent floats and shapes stay in the graph until Python reads them (graphs run
    as they are). `history`: input sizes of earlier captures, for symbolic sizes."""

    def __init__(self, *, lazy: bool = False, history: ShapeHistory | None = None) -> None:
        self.recorder: BreakRecorder | None = None
        self.book: BreakBook | None = None
        self.interpreter: Interpreter | None = None
        self.side_effects = SideEffects()
        self.guards = SegmentGuardBuilder()
        self.tracer = BreakTracer(self)
        self.recorder = BreakRecorder(self, lazy, history)
        self.book = BreakBook(self)

    def interpret(self) -> Interpreter:
        """The interpreter that runs the call (and user code called back by native code) on the
        tracer's hooks."""
        self.interpreter = Interpreter(self.tracer)
        return self.interpreter

    @property
    def effects(self) -> list[Effect]:
        """The side effects on outside objects, in program order (kept by `side_effects`)."""
        return self.side_effects.effects
