"""The capture's pending writes have one owner (`SideEffects`, jitlab/jit/effects/pending.py), and the
classes that note and read them (`WriteHooks`, `ReadsAfterWrites`) are owned objects, not mixins of
the tracer: each reads only attributes of `self` it defines itself, and reaches the tracer through
what it receives (a typed Protocol). So are the tracer's other jobs that were mixins (issue 48): the
content guards of outside arrays, the lazy texts, the class lookup guards, the dynamic and whole
reads, the objects of the call's arguments, module calls and containers, reads through a Python
`__getattribute__`, container methods, native and builtin calls; and the break tracer's replayed
warnings and once-only logging. An AST check, so that the mixing does not creep back."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest
import torch
from test_jit_mixin_declarations import names_defined, self_reads

from jitlab.jit.breaks.book import BreakingTracer, CaptureView
from jitlab.jit.effects.replay import ReplayTracer
from jitlab.jit.effects.snapshots import FreezingTracer
from jitlab.jit.entries.codegen import EntryFunction, PlannedRecorder, PlannedTracer
from jitlab.jit.graph.autograd_functions import FunctionTracer
from jitlab.jit.graph.dynamic_ints import IntRecorder
from jitlab.jit.graph.failed_ops import MetaRecorder
from jitlab.jit.graph.recording_tracer import RecordingTracer
from jitlab.jit.graph.speculations import SpeculatingRecorder
from jitlab.jit.graph.state_reads import StateRecorder, StateTracer
from jitlab.jit.graph.training_nodes import TrainingRecorder
from jitlab.jit.interpreter import Hooks, Interpreter
from jitlab.jit.interpreter.frame import RunningInterpreter
from jitlab.jit.tracing.appended_reads import GuardedReads
from jitlab.jit.tracing.break_tracer import BreakTracer
from jitlab.jit.tracing.builtin_calls import BuiltinTracer
from jitlab.jit.tracing.call_objects import CallObjectTracer
from jitlab.jit.tracing.capture_state import Capture
from jitlab.jit.tracing.class_lookups import LookupTracer
from jitlab.jit.tracing.container_methods import MethodTracer
from jitlab.jit.tracing.dynamic_reads import DynamicTracer
from jitlab.jit.tracing.lazy_texts import TextRecorder, TextTracer
from jitlab.jit.tracing.logging_effects import LoggingTracer
from jitlab.jit.tracing.lookaside_host import LookasideHost, LookasideTracer
from jitlab.jit.tracing.module_calls import ModuleCallTracer
from jitlab.jit.tracing.module_containers import ContainerTracer
from jitlab.jit.tracing.native_calls import NativeRecorder, NativeTracer
from jitlab.jit.tracing.native_reads import EntryRecorder
from jitlab.jit.tracing.outside_arrays import ArrayTracer
from jitlab.jit.tracing.tracer import Tracer
from jitlab.jit.tracing.user_getattribute import AttributeTracer
from jitlab.jit.tracing.warning_effects import WarningTracer
from jitlab.jit.tracing.whole_reads import WholeTracer
from jitlab.jit.tracing.writes import WriteHost

ROOT = Path(__file__).resolve().parents[2]
OWNED = [
    "jitlab/jit/effects/pending.py",
    "jitlab/jit/tracing/writes.py",
    "jitlab/jit/tracing/appended_reads.py",
    "jitlab/jit/tracing/outside_arrays.py",
    "jitlab/jit/tracing/lazy_texts.py",
    "jitlab/jit/tracing/class_lookups.py",
    "jitlab/jit/tracing/dynamic_reads.py",
    "jitlab/jit/tracing/call_objects.py",
    "jitlab/jit/tracing/whole_reads.py",
    "jitlab/jit/tracing/module_containers.py",
    "jitlab/jit/tracing/user_getattribute.py",
    "jitlab/jit/tracing/container_methods.py",
    "jitlab/jit/tracing/module_calls.py",
    "jitlab/jit/tracing/native_calls.py",
    "jitlab/jit/tracing/builtin_calls.py",
    "jitlab/jit/tracing/warning_effects.py",
    "jitlab/jit/tracing/logging_effects.py",
]


def undefined_self_reads(source: str) -> list[str]:
    """`Class.attr` for every `self.attr` read in a method of a class of `source` that the class
    neither defines (a method, a class-level name, or `self.attr = ...` in one of its methods) nor
    inherits from a class of the same source. Protocol classes (bodies of `...`) read nothing."""
    classes = {node.name: node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}

    def defined(cls: ast.ClassDef) -> set[str]:
        names = names_defined(cls)
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in classes:
                names |= defined(classes[base.id])
        return names

    return sorted(
        {f"{name}.{attr}" for name, cls in classes.items() for attr in self_reads(cls) - defined(cls)}
    )


def test_the_owners_of_pending_writes_read_only_what_they_define_or_receive() -> None:
    for path in OWNED:
        wrong = undefined_self_reads((ROOT / path).read_text(encoding="utf-8"))
        assert not wrong, f"{path} reads attributes of self it neither defines nor receives: {wrong}"


def test_the_tracer_state_reads_only_what_it_defines() -> None:
    """The base of the tracer (its state, its tracking, the owners it makes) is no mixin either."""
    wrong = undefined_self_reads((ROOT / "jitlab/jit/tracing/tracer_state.py").read_text(encoding="utf-8"))
    assert not wrong, f"tracer_state.py reads attributes of self it neither defines nor receives: {wrong}"


def test_the_owners_are_not_mixed_into_the_tracer() -> None:
    modules = {path.removesuffix(".py").replace("/", ".") for path in OWNED}
    mixed = [cls.__qualname__ for cls in Tracer.__mro__ if cls.__module__ in modules]
    assert not mixed, f"mixed into the tracer: {mixed}"
    # no mixin is left: the tracer is its hooks on its state (the interpreter's Hooks interface)
    assert [cls.__qualname__ for cls in Tracer.__mro__] == ["Tracer", "TracerState", "Hooks", "object"]
    # nor into the break tracer, which extends the tracer's hooks only
    mixed = [cls.__qualname__ for cls in BreakTracer.__mro__ if cls.__module__ in modules]
    assert not mixed, f"mixed into the break tracer: {mixed}"
    assert BreakTracer.__mro__[1:] == Tracer.__mro__


def test_the_tracer_holds_each_owner_made_for_it() -> None:
    """Each owner the tracer holds was made for that tracer (it reaches the tracer through the
    Protocol it receives), and the texts the interpreter tests before a call are the owner's."""
    tracer = Capture().tracer
    for name in (
        "arrays",
        "texts",
        "class_lookups",
        "dynamic_reads",
        "call_objects",
        "whole_reads",
        "module_containers",
        "attribute_reads",
        "container_methods",
        "module_calls",
        "native_calls",
        "builtin_calls",
        "warning_effects",
        "logging_effects",
    ):
        assert getattr(tracer, name).tracer is tracer, name
    assert tracer.pending_texts is tracer.texts.pending_texts


def test_a_mixin_reading_what_it_does_not_define_is_found() -> None:
    source = """
class Base:
    def __init__(self, pending):
        self.pending = pending

class Owner(Base):
    limit = 3
    def __init__(self, pending, reads):
        super().__init__(pending)
        self.reads = reads
    def ok(self):
        self.count: int = 0
        return self.reads.source_of(self.pending), self.limit, self.ok, self.count

class Mixin:
    def write(self, obj):
        self.effects.append(obj)
        return self.source_of(obj), self.write
"""
    assert undefined_self_reads(source) == ["Mixin.effects", "Mixin.source_of"]


def protocol_members(protocol: type) -> set[str]:
    """The names a Protocol asks for (typing.get_protocol_members from 3.13 on)."""
    members = getattr(typing, "get_protocol_members", None)
    if members is not None:
        return set(members(protocol))
    return set(typing._get_protocol_attrs(protocol))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "protocol",
    [
        GuardedReads,
        WriteHost,
        FreezingTracer,
        ReplayTracer,
        PlannedTracer,
        BreakingTracer,
        RecordingTracer,
        FunctionTracer,
        LookasideTracer,
        StateTracer,
        ArrayTracer,
        TextTracer,
        LookupTracer,
        DynamicTracer,
        CallObjectTracer,
        WholeTracer,
        ContainerTracer,
        AttributeTracer,
        MethodTracer,
        ModuleCallTracer,
        NativeTracer,
        BuiltinTracer,
        WarningTracer,
        LoggingTracer,
    ],
)
def test_the_tracer_has_what_each_stage_asks_of_it(protocol: type) -> None:
    """The lower stages and the owners see the tracer through a Protocol of what they use; the real
    tracer of a capture has every member (no type checker runs in CI, so this keeps them true), and
    each member is a public name of it (issue 48)."""
    tracer = Capture().tracer
    members = protocol_members(protocol)
    assert members, protocol
    missing = sorted(name for name in members if not hasattr(tracer, name))
    assert not missing, f"{protocol.__name__}: the tracer lacks {missing}"
    # what another module asks of the tracer is public: no `_name` reached through a Protocol
    private = sorted(name for name in members if name.startswith("_") and not name.startswith("__"))
    assert not private, f"{protocol.__name__} asks the tracer for private names: {private}"


def test_the_capture_has_what_its_collaborators_ask_of_it() -> None:
    """The tracer, the recorder and the break book see their capture as a `CaptureView`; a built
    capture has every member, and the members it has made are the collaborators themselves."""
    capture = Capture()
    members = protocol_members(CaptureView)
    assert members == {"guards", "side_effects", "tracer", "recorder", "book", "interpreter"}
    missing = sorted(name for name in members if not hasattr(capture, name))
    assert not missing, f"CaptureView: the capture lacks {missing}"
    assert capture.tracer.capture is capture and capture.recorder.capture is capture
    assert capture.book.capture is capture and capture.interpreter is None
    assert capture.tracer.recorder is capture.recorder and capture.book.tracer is capture.tracer


@pytest.mark.parametrize(
    ("protocol", "some"),
    [
        (PlannedRecorder, {"graph", "speculations", "has_symbols", "size_problem"}),
        (TrainingRecorder, {"graph", "grads", "node_of", "pause", "bind"}),
        (TextRecorder, {"has_symbols", "lazy_entries_in", "size_derived"}),
        (IntRecorder, {"history", "int_inputs", "lazy_int", "new_placeholder", "lazy_floats"}),
        (MetaRecorder, {"pause", "use", "use_shape"}),
        (StateRecorder, {"fresh", "has_random", "tracer"}),
        (SpeculatingRecorder, {"add_spec", "graph_arg", "lazy_floats", "use_shape", "fresh"}),
        (NativeRecorder, {"activate", "consumed", "lazy_floats", "reading", "native_depth"}),
        (EntryRecorder, {"lazy_entry"}),
    ],
)
def test_the_recorder_has_what_each_stage_asks_of_it(protocol: type, some: set[str]) -> None:
    """Planning an entry (`PlannedRecorder`), recording a training node (`TrainingRecorder`), the
    tracer's lazy texts (`TextRecorder`), its native calls (`NativeRecorder`, `EntryRecorder`) and the
    graph helpers recorder.py imports (dynamic ints and floats, failed operations, state reads,
    speculations) see the graph recorder through a Protocol; the real one has every member, and each
    member is a public name of it (issue 48)."""
    recorder = Capture().recorder
    members = protocol_members(protocol)
    assert some <= members
    missing = sorted(name for name in members if not hasattr(recorder, name))
    assert not missing, f"{protocol.__name__}: the recorder lacks {missing}"
    # what another module asks of the recorder is public: no `_name` reached through a Protocol
    private = sorted(name for name in members if name.startswith("_") and not name.startswith("__"))
    assert not private, f"{protocol.__name__} asks the recorder for private names: {private}"


def test_the_interpreter_has_what_its_helpers_ask_of_it() -> None:
    """Interpreted generators and class bodies see the interpreter running them as a
    `RunningInterpreter` (frame.py: core.py imports them); the real one has every member."""
    interpreter = Interpreter(Hooks())
    members = protocol_members(RunningInterpreter)
    assert {"hooks", "frames", "run_frame", "run_class_body"} <= members
    missing = sorted(name for name in members if not hasattr(interpreter, name))
    assert not missing, f"RunningInterpreter: the interpreter lacks {missing}"


def test_the_lookasides_have_what_their_helpers_ask_of_them() -> None:
    """dict_subclasses.py and script_functions.py see the capture's `Lookasides` as a `LookasideHost`
    (lookasides.py imports them); the real one has every member, its tracer is the capture's."""
    capture = Capture()
    lookasides = capture.tracer.lookasides
    members = protocol_members(LookasideHost)
    assert members == {"tracer", "specials", "interp"}
    missing = sorted(name for name in members if not hasattr(lookasides, name))
    assert not missing, f"LookasideHost: the lookasides lack {missing}"
    assert lookasides.tracer is capture.tracer and lookasides.interp is None


def test_a_cache_entry_function_has_what_the_frontend_asks_of_it() -> None:
    """The frontend reads a cache entry's generated function as an `EntryFunction` (its hits and
    per-break deopts); a real one has both, counting the calls it served."""
    import jitlab.jit

    jitted = jitlab.jit.jit(lambda x: x * 2 + 1)
    for n in range(3):
        assert torch.equal(jitted(torch.full((3,), float(n))), torch.full((3,), 2.0 * n + 1))
    (entry,) = jitted._cache.entries
    members = protocol_members(EntryFunction)
    assert members == {"hits", "deopts", "__call__"}
    assert entry.fn.hits == [2] and entry.fn.deopts == []
