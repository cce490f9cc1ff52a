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
import inspect
import typing
from pathlib import Path

import pytest
import torch
from test_jit_mixin_declarations import names_defined, self_reads

from jitlab.jit.breaks.book import BookRecorder, BreakingTracer, CaptureView
from jitlab.jit.breaks.segments import SplitRecorder
from jitlab.jit.effects.replay import ReplayRecorder, ReplayTracer
from jitlab.jit.effects.snapshots import FreezingRecorder, FreezingTracer
from jitlab.jit.entries.codegen import EntryFunction, PlannedRecorder, PlannedTracer
from jitlab.jit.graph.autocast_nodes import AutocastRecorder, AutocastTracer
from jitlab.jit.graph.autograd_functions import FunctionRecorder, FunctionTracer
from jitlab.jit.graph.dynamic_ints import IntRecorder
from jitlab.jit.graph.failed_ops import MetaRecorder
from jitlab.jit.graph.recording_tracer import RecordingTracer
from jitlab.jit.graph.speculations import SpeculatingRecorder
from jitlab.jit.graph.state_reads import StateRecorder, StateTracer
from jitlab.jit.graph.tensor_writes import DataWriteRecorder
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
from jitlab.jit.tracing.lookaside_host import LookasideHost, LookasideRecorder, LookasideTracer
from jitlab.jit.tracing.module_calls import ModuleCallTracer
from jitlab.jit.tracing.module_containers import ContainerTracer
from jitlab.jit.tracing.native_calls import NativeRecorder, NativeTracer
from jitlab.jit.tracing.native_reach import ReachTracer
from jitlab.jit.tracing.native_reads import EntryRecorder
from jitlab.jit.tracing.outside_arrays import ArrayTracer
from jitlab.jit.tracing.subclass_lookups import SubclassLookupTracer
from jitlab.jit.tracing.tracer import Tracer
from jitlab.jit.tracing.tracer_state import TracerState
from jitlab.jit.tracing.training_calls import PausingRecorder
from jitlab.jit.tracing.user_getattribute import AttributeTracer
from jitlab.jit.tracing.warning_effects import WarningTracer
from jitlab.jit.tracing.whole_reads import WholeTracer
from jitlab.jit.tracing.writes import WriteHost, WriteRecorder

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


TRACER_PROTOCOLS = [
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
    ReachTracer,
    SubclassLookupTracer,
    BuiltinTracer,
    WarningTracer,
    LoggingTracer,
    AutocastTracer,
]


@pytest.mark.parametrize("protocol", TRACER_PROTOCOLS)
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
        (AutocastRecorder, {"graph", "tracer", "autocast_open", "autocast_expected", "sync_grad_mode"}),
        (TextRecorder, {"has_symbols", "lazy_entries_in", "size_derived"}),
        (IntRecorder, {"history", "int_inputs", "lazy_int", "new_placeholder", "lazy_floats"}),
        (MetaRecorder, {"pause", "use", "use_shape"}),
        (StateRecorder, {"fresh", "has_random", "tracer"}),
        (SpeculatingRecorder, {"add_spec", "graph_arg", "lazy_floats", "use_shape", "fresh"}),
        (NativeRecorder, {"activate", "consumed", "lazy_floats", "reading", "native_depth"}),
        (EntryRecorder, {"lazy_entry"}),
        (DataWriteRecorder, {"graph", "node_of", "dynamic_roots", "fresh", "sync_grad_mode", "pause"}),
        (PausingRecorder, {"pause"}),
        (ReplayRecorder, {"node_of", "node_for", "lazy_entry"}),
        (FreezingRecorder, {"graph", "node_of", "paused", "opaque", "op_count", "pause"}),
        (BookRecorder, {"speculations", "placeholders", "note_segment", "has_symbols", "size_problem"}),
        (SplitRecorder, {"graph", "constants"}),
        (FunctionRecorder, {"lazy", "opaque", "opaque_mutation", "opaque_random", "record_opaque_call"}),
        (LookasideRecorder, {"has_mutation", "pause", "record_opaque_call"}),
        (WriteRecorder, {"lazy", "native_depth", "reading", "use", "dynamic_roots", "bind"}),
    ],
)
def test_the_recorder_has_what_each_stage_asks_of_it(protocol: type, some: set[str]) -> None:
    """Planning an entry (`PlannedRecorder`), recording a training node (`TrainingRecorder`), the
    tracer's lazy texts (`TextRecorder`), its native calls (`NativeRecorder`, `EntryRecorder`), the
    graph helpers recorder.py imports (dynamic ints and floats, failed operations, state reads,
    speculations), `.data` writes (`DataWriteRecorder`), rendering and freezing effect values
    (`ReplayRecorder`, `FreezingRecorder`), the break book and the split of its graph (`BookRecorder`,
    `SplitRecorder`), custom Functions and the lookasides (`FunctionRecorder`, `LookasideRecorder`),
    the write hooks (`WriteRecorder`) and what runs library code unrecorded (`PausingRecorder`) see
    the graph recorder through a Protocol; the real one has every member, and each member is a public
    name of it (issue 48)."""
    recorder = Capture().recorder
    members = protocol_members(protocol)
    assert some <= members
    missing = sorted(name for name in members if not hasattr(recorder, name))
    assert not missing, f"{protocol.__name__}: the recorder lacks {missing}"
    # what another module asks of the recorder is public: no `_name` reached through a Protocol
    private = sorted(name for name in members if name.startswith("_") and not name.startswith("__"))
    assert not private, f"{protocol.__name__} asks the recorder for private names: {private}"


def test_the_recorder_is_what_the_tracer_protocols_say_it_is() -> None:
    """Each Protocol through which a stage sees the tracer types its `recorder` as a Protocol of what
    that stage uses of it (never the concrete `GraphRecorder`, issue 48); the recorder of a real
    capture has every member of each. The tracer itself names the class it holds: its annotation is
    the type of the capture's recorder (`BreakRecorder`)."""
    capture = Capture()
    recorder = capture.tracer.recorder
    checked = []
    for protocol in TRACER_PROTOCOLS:
        prop = inspect.getattr_static(protocol, "recorder", None)
        if not isinstance(prop, property):
            continue
        wanted = typing.get_type_hints(prop.fget)["return"]
        assert getattr(wanted, "_is_protocol", False), f"{protocol.__name__}.recorder is {wanted}"
        missing = sorted(name for name in protocol_members(wanted) if not hasattr(recorder, name))
        assert not missing, f"{protocol.__name__}.recorder ({wanted.__name__}): the recorder lacks {missing}"
        checked.append(protocol.__name__)
    assert {"WriteHost", "FreezingTracer", "ReplayTracer", "FunctionTracer", "LookasideTracer"} <= set(
        checked
    )
    assert {"DynamicTracer", "BuiltinTracer", "WarningTracer", "LoggingTracer"} <= set(checked)
    assert typing.get_type_hints(TracerState.recorder.fget)["return"] is type(capture.recorder)


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


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def foreign_private_names(classes: list[tuple[str, ast.ClassDef]]) -> list[str]:
    """`module.Class._name` for each private name a class of `classes` (a method resolution order,
    each with its module) reads of `self`, overrides or declares by a bare annotation, that a class
    of another module among them defines: a name one module's class reaches in another's."""
    declared = {
        id(node): {
            n.target.id
            for n in node.body
            if isinstance(n, ast.AnnAssign) and n.value is None and isinstance(n.target, ast.Name)
        }
        for _, node in classes
    }
    # a bare class-level annotation declares a name without defining it (unless the class assigns it)
    defined = {id(node): names_defined(node) - (declared[id(node)] - _assigned(node)) for _, node in classes}
    wrong = []
    for module, node in classes:
        methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        used = {name for name in self_reads(node) | methods | declared[id(node)] if _private(name)}
        for name in sorted(used):
            owners = [m for m, other in classes if other is not node and name in defined[id(other)]]
            if any(m != module for m in owners):
                wrong.append(f"{module}.{node.name}.{name}")
    return wrong


def _assigned(node: ast.ClassDef) -> set[str]:
    """The names a class assigns to `self` in its methods (`self.X = ...`)."""
    names = set()
    for n in ast.walk(node):
        targets = (
            n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
        )
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                names.add(t.attr)
    return names


def test_the_recorder_and_its_mixins_share_only_public_names() -> None:
    """The graph recorder of a capture (`BreakRecorder`) and the classes mixed into it, each in a
    module of its own (recorder.py, shapes.py, result_reads.py, compiled_ints.py, break_recorder.py),
    read, override and declare only public names of one another: a private name stays in its module
    (issue 48)."""
    recorder_type = type(Capture().recorder)
    classes = []
    for cls in recorder_type.__mro__:
        if cls.__module__.startswith("jitlab."):
            tree = ast.parse(Path(inspect.getsourcefile(cls) or "").read_text(encoding="utf-8"))
            node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
            classes.append((cls.__module__, node))
    assert len(classes) >= 5, [m for m, _ in classes]
    assert not foreign_private_names(classes), foreign_private_names(classes)


def test_a_private_name_shared_across_modules_is_found() -> None:
    """The check can fail: a mixin reading, overriding or declaring a private name that the class of
    another module defines is reported; the same classes in one module, or public names, are not."""
    base = ast.parse(
        "class Base:\n"
        "    def __init__(self):\n"
        "        self._dynamic, self.public = {}, 1\n"
        "    def _arg(self, v):\n"
        "        return v\n"
    ).body[0]
    mixin = ast.parse(
        "class Mixin:\n"
        "    _grad: bool\n"
        "    public: int\n"
        "    def _arg(self, v):\n"
        "        return self._dynamic, self._own, self.public\n"
        "    def _helper(self):\n"
        "        self._own = 0\n"
    ).body[0]
    grad = ast.parse("class Grad:\n    def __init__(self):\n        self._grad = True\n").body[0]
    assert (
        isinstance(base, ast.ClassDef) and isinstance(mixin, ast.ClassDef) and isinstance(grad, ast.ClassDef)
    )
    found = foreign_private_names([("m.mixins", mixin), ("m.grad", grad), ("m.base", base)])
    # both sides of an override across modules are reported
    assert found == [
        "m.mixins.Mixin._arg",
        "m.mixins.Mixin._dynamic",
        "m.mixins.Mixin._grad",
        "m.base.Base._arg",
    ]
    assert foreign_private_names([("m.base", mixin), ("m.base", base), ("m.base", grad)]) == []
