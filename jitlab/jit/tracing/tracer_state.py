"""The tracer's state: what it owns, where every outside value came from (`source_of`), the guards
and graph inputs a read adds (`track`), the problems noted, and the per-segment memory a graph break
resets. `Tracer` (tracer.py) adds the interpreter's hooks on top; the jobs that were mixins of it are
owners made here (issue 48), each reaching the tracer through a small Protocol of what it uses.
"""

from __future__ import annotations

import types
from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn
from torch.nn.parameter import is_lazy

from jitlab.jit.breaks.book import CaptureView
from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.effects.recipes import Recipe
from jitlab.jit.effects.replay import Effect
from jitlab.jit.effects.snapshots import Freezer
from jitlab.jit.graph.argument_generators import GeneratorSlot
from jitlab.jit.guards.builder import SCALAR_TYPES, VALUE_TYPES, GuardBuilder
from jitlab.jit.guards.kinds import CONTAINERS
from jitlab.jit.guards.origins import find_in_module, find_path
from jitlab.jit.guards.sources import AttrSource, Source
from jitlab.jit.interpreter import Interpreter
from jitlab.jit.interpreter.hooks import Hooks
from jitlab.jit.reasons import Reason, ReasonKind
from jitlab.jit.tracing.appended_reads import ReadsAfterWrites
from jitlab.jit.tracing.break_recorder import BreakRecorder
from jitlab.jit.tracing.builtin_calls import BuiltinCalls
from jitlab.jit.tracing.call_objects import CallObjects
from jitlab.jit.tracing.class_lookups import ClassLookups
from jitlab.jit.tracing.container_methods import ContainerMethods
from jitlab.jit.tracing.dynamic_reads import DynamicReads
from jitlab.jit.tracing.lazy_texts import LazyTexts
from jitlab.jit.tracing.lookasides import Lookasides, Specials
from jitlab.jit.tracing.module_calls import ModuleCalls
from jitlab.jit.tracing.module_containers import ModuleContainers
from jitlab.jit.tracing.native_calls import NativeCalls
from jitlab.jit.tracing.outside_arrays import OutsideArrays
from jitlab.jit.tracing.trace_rules import rule_for
from jitlab.jit.tracing.user_getattribute import UserAttributeReads
from jitlab.jit.tracing.whole_reads import WholeReads
from jitlab.jit.tracing.writes import WriteHooks


class TracerState(Hooks):
    """The tracer's state and its tracking of outside values (the base of `Tracer`)."""

    def __init__(self, capture: CaptureView) -> None:
        self.capture = capture
        self.builder: GuardBuilder = capture.guards  # the current segment's (see BreakBook.call_break)
        self._sources: dict[int, tuple[Any, Source]] = {}
        self._fresh: dict[int, Any] = {}
        self.side_effects: SideEffects = capture.side_effects  # the pending writes (effects/pending.py)
        self.after_writes = ReadsAfterWrites(self.side_effects, self)  # reads of what the call changed
        self.writer = WriteHooks(self, self.side_effects)  # the write hooks below (writes.py)
        self.arrays = OutsideArrays(self)  # content guards of outside numpy arrays and buffers
        self.texts = LazyTexts(self)  # f-strings of sizes not read yet (lazy_texts.py)
        self.pending_texts = self.texts.pending_texts  # the same dict: the interpreter tests it
        self.call_objects = CallObjects(self)  # objects of the call's arguments, guarded by structure
        self.dynamic_reads = DynamicReads(self)  # reads that may make a number a graph input
        self.whole_reads = WholeReads(self)  # the whole content of what native code reads
        self.module_containers = ModuleContainers(self)  # torch's module containers, walked
        self.attribute_reads = UserAttributeReads(self)  # reads through Python __getattribute__
        self.container_methods = ContainerMethods(self)  # `LOG.append(v)`, `d.get(k)` on outside containers
        self.module_calls = ModuleCalls(self)  # the function a module call runs, its hooks guarded
        self.native_calls = NativeCalls(self)  # C functions and library code called by the program
        self.builtin_calls = BuiltinCalls(self)  # the native calls understood exactly (`len`, `print`)
        self._modules: list[tuple[nn.Module, Source]] = []
        self.problems: list[Reason] = []  # each with its kind and the file:line of the code that met it
        self.notes: list[str] = []
        self.class_lookups = ClassLookups(self)  # guards on what a lookup found in a class
        self.initialising = False  # the call initialises lazy parameters (see capture.first_call_only)
        # code whose effects the capture cannot see ran (a user function run natively, the call at a
        # graph break): it may have changed anything, so the call must not be run again
        self.unseen_effects = False
        self.specials = Specials(self._runs_special_methods, self.class_lookup)
        self.lookasides = Lookasides(self, self.specials)
        self.freezer = Freezer(self)  # effect arguments as they were when the effect happened
        self.recipes: dict[int, Recipe] = {}  # objects native constructors made (effects/recipes.py)

    # ------------------------------------------------------------ the capture's state
    @property
    def recorder(self) -> BreakRecorder:
        """The capture's graph recorder (made right after the tracer): always a `BreakRecorder`, the
        one `Capture` makes; the capture's view types it only as far as the break book reads it."""
        return self.capture.recorder  # type: ignore[return-value]

    @property
    def effects(self) -> list[Effect]:
        """The capture's side effects on outside objects, in program order."""
        return self.side_effects.effects

    @property
    def interpreter(self) -> Interpreter | None:
        """The interpreter running the capture (user code called back by native code runs in it too)."""
        return self.capture.interpreter

    # ------------------------------------------------------------ bookkeeping
    def problem(self, message: str, kind: ReasonKind) -> None:
        """Note a problem that makes the capture unusable for later calls: `kind` is what the caller
        met (jitlab.jit.reasons); the line the innermost interpreted frame runs is its place."""
        if all(p.message != message for p in self.problems):
            self.problems.append(Reason(kind, message, self.running_line()))

    def add_problem(self, reason: Reason) -> None:
        """Note a problem already made (e.g. one set aside while deciding on a graph break); the same
        message is noted once."""
        if all(p.message != reason.message for p in self.problems):
            self.problems.append(reason)

    def running_line(self) -> str | None:
        """`file:line` of the instruction the innermost interpreted frame runs, or None outside one."""
        frames = getattr(self.interpreter, "frames", None)
        if not frames:
            return None
        frame = frames[-1]
        return f"{frame.code.co_filename}:{frame.current_line()}"

    def source_of(self, value: object) -> Source | None:
        entry = self._sources.get(id(value))
        return entry[1] if entry is not None else None

    def fresh(self, obj: object) -> Any:
        self._fresh[id(obj)] = obj
        t = type(obj)
        if (t is dict or t is set) and self.recorder is not None and self.recorder.lazy_floats:
            self.recorder.use(list(obj))  # hashing reads the value of data-dependent keys
        return obj

    def is_fresh(self, obj: object) -> bool:
        return id(obj) in self._fresh

    # ------------------------------------------------------------ graph breaks (see jitlab.jit.breaks.book)
    def adopt(self, obj: object, source: Source) -> None:
        """An object made during the call is now reachable by code the capture cannot see (it was
        handed to a graph break): from now on it is an outside object read from `source`."""
        self._fresh.pop(id(obj), None)
        self._sources[id(obj)] = (obj, source)

    def know_content(self, obj: object) -> None:
        """The whole content of an adopted object has just been guarded (`deep_track`): what the
        program changes in it afterwards is replayed, so reading it after such a change is exact."""
        self.deep_track(obj)
        self.side_effects.know_content(obj)

    def new_segment(self, builder: GuardBuilder) -> None:
        """A graph break ran code the capture cannot see: later reads are guarded anew, by `builder`.
        Every per-segment memory of reads and writes must be forgotten here."""
        self.builder = builder
        self.recorder.grads.new_segment(t for t, _node in self.recorder.node_of.values())
        self.side_effects.new_segment()
        self.whole_reads.new_segment()
        self.module_calls.new_segment()
        self.class_lookups.new_segment()
        self.arrays.forget_outside_arrays()

    def generator_slot(self, generator: torch.Generator) -> GeneratorSlot | None:
        """The slot a recorded draw takes `generator` from (call_objects.py), or None."""
        return self.call_objects.generator_slot(generator)

    def generator_kept(self, generator: torch.Generator) -> None:
        """A graph keeps `generator` itself: if it is guarded by structure, guard its identity too."""
        self.call_objects.identity_read(generator)

    def is_outside(self, obj: object) -> bool:
        """Whether `obj` was not made during the call: only such objects are guarded, and writes to
        them are effects (the owners ask this before guarding or replaying anything)."""
        return id(obj) not in self._fresh

    def class_lookup(self, klass: type, name: str) -> None:
        self.class_lookups.class_lookup(klass, name)  # class_lookups.py

    # ------------------------------------------------------------ tracking
    def track(self, value: object, source: Source) -> Any:
        """Register `value` read from `source` and guard what matters about it."""
        try:
            return self._track(value, source)
        except Exception as exc:  # a bug here must cost the cache entry, never the user's call
            self.problem(
                f"internal error while guarding {source.describe()}: {type(exc).__name__}: {exc}",
                ReasonKind.INTERNAL,
            )
            return value

    def track_read(self, value: object, source: Source, holder: object = None, key: object = None) -> Any:
        """`track` for a value the program gets from `holder[key]` (dynamic_reads.py)."""
        return self.dynamic_reads.track_read(value, source, holder, key)

    def deep_track(self, value: object, depth: int = 0) -> None:
        """An outside object is read as a whole by native code: guard all of its content (whole_reads.py)."""
        self.whole_reads.deep_track(value, depth)

    def _track(self, value: object, source: Source) -> Any:
        t = type(value)
        if t in SCALAR_TYPES or isinstance(value, VALUE_TYPES):
            self.builder.equals_match(source, value)
            return value
        if isinstance(value, torch.Tensor):
            if is_lazy(value):
                self.initialising = True  # a lazy module's first call: not cacheable, but the next one is
                self.problem("a lazy module initialises its parameters in this call", ReasonKind.GLOBAL_STATE)
                return value
            known = self._sources.get(id(value))
            if known is not None and known[1] != source:
                self.builder.expr(source, "{v} is " + self.builder.var(known[1]), True)
                return value
            self._sources[id(value)] = (value, source)
            self.builder.tensor_match(source, value)
            node = self.recorder.add_input(value, source.describe())
            node.meta["jit_var"] = self.builder.var(source)
            return value
        if id(value) not in self._sources:
            self._sources[id(value)] = (value, source)
        if t in CONTAINERS:
            self.builder.type_match(source, value)
            return value
        if self.call_objects.per_call_object(
            value, source
        ):  # an object of the call's arguments (call_objects.py)
            return value
        self.builder.id_match(source, value)
        if isinstance(value, nn.Module):
            self._modules.append((value, source))
        return value

    def resolve_tensor(self, tensor: torch.Tensor) -> fx.Node:
        """A tensor reached the graph without being read through a source: find it or give up."""
        for module, source in list(self._modules):
            found = find_in_module(module, source, tensor, 0)
            if found is not None:
                self.track(tensor, found)
                return self.recorder.node_of[id(tensor)][1]
        if self.find_source(tensor) is not None:
            return self.recorder.node_of[id(tensor)][1]
        self.problem(
            f"a tensor of unknown origin (shape {tuple(tensor.shape)}) is used", ReasonKind.UNTRACKED_VALUE
        )
        return self.recorder.add_input(tensor, "unknown")

    def find_source(self, target: object) -> Source | None:
        """Search a path to `target` from the objects already reached (see origins.py); guard every
        step and `target` by identity. None when there is no such path."""
        roots = [(obj, src) for obj, src in list(self._sources.values()) if not isinstance(obj, torch.Tensor)]
        path = find_path(roots, target)
        if path is None:
            return None
        try:
            for obj, src in path:
                self.track(obj, src)
            source = path[-1][1]
            self.builder.id_match(source, target)
        except Exception as exc:  # a bookkeeping failure costs the cache entry only
            self.problem(
                f"internal error while guarding a found path: {type(exc).__name__}: {exc}",
                ReasonKind.INTERNAL,
            )
            return None
        return source

    # ------------------------------------------------------------ what other stages ask of the owners
    # (the class lookups and the lookasides cannot import the owners that answer these)
    def instance_dict_source(self, obj: object, source: Source) -> Source:
        return self.attribute_reads.instance_dict_source(obj, source)  # user_getattribute.py

    def module_attr_source(self, module: nn.Module, source: Source, name: str) -> AttrSource:
        return self.module_calls.module_attr_source(module, source, name)  # module_calls.py

    def models_iteration(self, obj: object) -> bool:
        return self.module_containers.models_iteration(obj)  # module_containers.py

    def guard_children(self, module: object, values: bool) -> None:
        self.module_containers.guard_children(module, values)  # module_containers.py

    # ------------------------------------------------------------ decisions
    def step_into(self, func: types.FunctionType) -> bool:
        return rule_for(func, self.is_fresh(func)).interpret  # trace_rules.py: the one policy

    def _runs_special_methods(self, func: types.FunctionType) -> bool:
        """Whether a special method (`__getattr__`, `__len__`, `__call__`, ...) called by native code is
        interpreted: user code and the hook objects of torch.nn.utils, but not torch.nn.Module's own
        methods, whose effects the tracer models directly (module tables, `len` of a ModuleList)."""
        return self.step_into(func) and not (func.__module__ or "").startswith("torch.nn.modules")
