"""The tracer's handling of writes: attribute, item, global and closure-cell writes of interpreted code.

A write to an object created during the call changes nothing outside and needs nothing. A write to
an outside object is done, then recorded as an `Effect` that the cache entry replays after the graph
(`setattr`, `object.__setattr__` for the low-level write a user `__setattr__` ends with, item writes,
deletions, globals, cells). The object must have a source: one read through a guarded path, or one
found by searching from the objects the capture already reached (origins.py). A user-written
`__setattr__`, `__delattr__`, `__setitem__` or `__delitem__` runs interpreted, so what it does is
recorded write by write. `param.data = t` becomes a graph operation (tensor_writes.py).
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable
from typing import Any, Protocol

import torch
import torch.nn as nn

from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.effects.replay import Effect
from jitlab.jit.effects.snapshots import Freezer
from jitlab.jit.graph.plain import plain_key
from jitlab.jit.graph.tensor_writes import DataWriteRecorder, record_set_data
from jitlab.jit.graph.training_nodes import TrainingRecorder, record_set_grad
from jitlab.jit.guards.kinds import container_base
from jitlab.jit.guards.sources import Source, is_literal_key
from jitlab.jit.interpreter import Interpreter
from jitlab.jit.reasons import ReasonKind
from jitlab.jit.tracing.call_objects import CallObjects
from jitlab.jit.tracing.lookasides import Specials


class WriteRecorder(DataWriteRecorder, TrainingRecorder, Protocol):
    """What the write hooks use of the graph recorder (tracing's BreakRecorder, whose `reading` comes
    from graph/shapes.py's `SymbolicSizes`): what recording `.data` and `.grad` writes needs, the
    eager backend's flag, and what marks a number read by Python (a key, an index).
    tests/jit/test_jit_owned_state.py checks that the real recorder has every member."""

    lazy: bool
    native_depth: int

    def use(self, value: object) -> None: ...

    def reading(self, reason: str) -> contextlib.AbstractContextManager[None]: ...


class WriteHost(Protocol):
    """What the write hooks need of the tracer: where an object came from (or a search for it), the
    recorder and the interpreter running the call, the user-written special methods, the freezer of
    effect arguments, the objects of the call's arguments (a key's identity is read), and noting a
    problem."""

    @property
    def interpreter(self) -> Interpreter | None: ...

    @property
    def recorder(self) -> WriteRecorder: ...

    @property
    def specials(self) -> Specials: ...

    @property
    def freezer(self) -> Freezer: ...

    @property
    def call_objects(self) -> CallObjects: ...

    def source_of(self, value: object) -> Source | None: ...

    def find_source(self, target: object) -> Source | None: ...

    def is_fresh(self, obj: object) -> bool: ...

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def hand_to_torch(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any: ...


class WriteHooks:
    """The write hooks of the interpreter, which the tracer's hooks of the same names call: each
    write is done, and noted in `pending` (the capture's `SideEffects`)."""

    def __init__(self, tracer: WriteHost, pending: SideEffects) -> None:
        self.tracer = tracer
        self.pending = pending

    def _write_target(self, obj: object, what: str) -> Source | None:
        """The source of an outside object about to be changed, or None if the object is fresh."""
        if self.tracer.is_fresh(obj):
            return None
        source = self.tracer.source_of(obj) or self.tracer.find_source(obj)
        if source is None:
            # a write (or deletion) the entry could not replay: it cannot name the object it changes
            self.tracer.problem(f"{what} on a {type(obj).__name__} of unknown origin", ReasonKind.SIDE_EFFECT)
        return source

    def store_attr(self, obj: object, name: str, value: object) -> None:
        self.pending.note_place("attr", obj, name)
        if isinstance(obj, torch.Tensor):
            self.store_tensor_attr(obj, name, value)
            return
        if self.tracer.interpreter is not None:
            user_setattr = self.tracer.specials.method(type(obj), "__setattr__")
            if user_setattr is not None:
                self.tracer.interpreter.call(
                    user_setattr, (obj, name, value), {}
                )  # e.g. EasyDict: self[name] = value
                return
        self.raw_store_attr(obj, name, value, setattr, "attr")

    def store_tensor_attr(self, tensor: torch.Tensor, name: str, value: object) -> None:
        if (
            name == "data"
            and isinstance(value, torch.Tensor)
            and type(tensor) in (torch.Tensor, nn.Parameter)
        ):
            record_set_data(self.tracer.recorder, tensor, value)
            return
        if name == "grad" and (value is None or isinstance(value, torch.Tensor)):
            record_set_grad(self.tracer.recorder, tensor, value)
            return
        if name == "requires_grad" and type(value) is bool and self._made_leaf(tensor):
            # `t.requires_grad = flag` on a tensor the call made with no autograd history: a no-op
            # when unchanged (`mask.requires_grad = False`); otherwise `t.requires_grad_(flag)`, a
            # tensor method the recorder records, which only the eager backend keeps (AOTAutograd
            # drops it: the output would not require grad)
            if value == tensor.requires_grad:
                return
            if self.tracer.recorder.lazy:
                tensor.requires_grad_(value)
                return
        if not hasattr(type(tensor), name):
            # a plain attribute in the tensor's __dict__ (`t.stop_gradient = True`): on a tensor the
            # call made, kept for the rest of the call, and refused if the tensor leaves it
            # (replay.refuse_made_tensor: the graph's tensors have no attributes); replayed on an
            # outside tensor
            if self._made(tensor):
                setattr(tensor, name, value)
            else:
                self.raw_store_attr(tensor, name, value, setattr, "attr")
            return
        self.tracer.problem(f"attribute write .{name} on a tensor", ReasonKind.SIDE_EFFECT)
        setattr(tensor, name, value)

    def _made(self, tensor: torch.Tensor) -> bool:
        """A tensor made by the graph, not an input, parameter or buffer."""
        known = self.tracer.recorder.node_of.get(id(tensor))
        return known is not None and known[0] is tensor and known[1].op != "placeholder"

    def _made_leaf(self, tensor: torch.Tensor) -> bool:
        """A plain tensor made by the graph with no autograd history: one whose `requires_grad`
        eager code may set."""
        return type(tensor) is torch.Tensor and self._made(tensor) and tensor.grad_fn is None

    def raw_store_attr(
        self, obj: object, name: str, value: object, write: Callable[[object, str, object], None], kind: str
    ) -> None:
        """Write `obj.<name> = value` with `write` (setattr, or object.__setattr__ for the low-level
        write a user `__setattr__` ends with) and record it for replay as effect `kind`."""
        source = self._write_target(obj, f"attribute write .{name}")
        write(obj, name, value)
        if source is not None:
            self.pending.record(Effect(kind, source, name, (value,)))
            self.pending.note_attr_written(obj, name)

    def delete_attr(self, obj: object, name: str) -> None:
        if self.tracer.interpreter is not None:
            user_delattr = self.tracer.specials.method(type(obj), "__delattr__")
            if user_delattr is not None:
                self.tracer.interpreter.call(user_delattr, (obj, name), {})
                return
        source = self._write_target(obj, f"del .{name}")
        delattr(obj, name)
        if source is not None:
            self.pending.record(Effect("delattr", source, name))
            self.pending.note_attr_written(obj, name)

    def store_item(self, container: object, key: object, value: object) -> None:
        if isinstance(container, torch.Tensor):
            self.tracer.hand_to_torch(container.__setitem__, (key, value), {})
            return
        if self.tracer.interpreter is not None:
            user_setitem = self.tracer.specials.method(type(container), "__setitem__")
            if user_setitem is not None:
                self.tracer.interpreter.call(user_setitem, (container, key, value), {})
                return
        with self.tracer.recorder.reading("used as a key or index"):
            self.tracer.recorder.use(key)
        self.tracer.call_objects.identity_read(
            key
        )  # an object used as a key: guarded by identity (call_objects.py)
        key = plain_key(key)  # hashed or used as an index: read, re-checked, so a plain int from now on
        self.pending.note_place("item", container, key)
        source = self._write_target(container, "item write")
        replayed = value
        if source is not None and type(key) is slice and container_base(type(container)) is list:
            replayed = self.tracer.freezer.consumed(
                value, deep=False
            )  # the items are copied now (snapshots.py)
        added = self.pending.key_addition(container, key) if source is not None else None
        if source is not None:
            self.pending.note_pre_content(container)
        if isinstance(key, torch.Tensor) and self.tracer.recorder.lazy:  # `lst[t] = v` reads Tensor.__index__
            self.tracer.recorder.native_depth += 1
            try:
                container[key] = value
            finally:
                self.tracer.recorder.native_depth -= 1
        else:
            container[key] = value
        if source is not None:
            if not is_literal_key(key) and not isinstance(key, torch.Tensor):
                self.tracer.problem(
                    "item write with a non-literal key on an outside container", ReasonKind.SIDE_EFFECT
                )
            self.pending.record(Effect("item", source, key, (replayed,)))
            self.pending.note_key_added(container, key, added)
            if container_base(type(container)) is dict and is_literal_key(key):
                self.pending.note_key_written(container, key)
            else:
                self.pending.forget_appended(container)
                self.pending.note_mutated(container)

    def delete_item(self, container: object, key: object) -> None:
        if self.tracer.interpreter is not None:
            user_delitem = self.tracer.specials.method(type(container), "__delitem__")
            if user_delitem is not None:
                self.tracer.interpreter.call(user_delitem, (container, key), {})
                return
        self.tracer.call_objects.identity_read(key)
        source = self._write_target(container, "item deletion")
        if source is not None:
            self.pending.note_pre_content(container)
        del container[key]
        if source is not None:
            self.pending.record(Effect("delitem", source, key))
            self.pending.forget_appended(container)
            self.pending.forget_added_keys(container)
            self.pending.note_mutated(container)

    def store_global(self, globals_: dict[str, Any], name: str, value: object) -> None:
        self.pending.note_place("item", globals_, name)
        globals_[name] = value
        self.pending.record(Effect("global", globals_, name, (value,)))

    def delete_global(self, globals_: dict[str, Any], name: str) -> None:
        """Before the tracer deletes the global (as the interpreter's plain hook does): not replayed."""
        self.tracer.problem(f"del of the global {name}", ReasonKind.SIDE_EFFECT)

    def store_cell(self, cell: types.CellType, value: object) -> None:
        from jitlab.jit.interpreter.ops_names import EMPTY

        if value is EMPTY:
            self.tracer.problem("del of a closure variable of an outside function", ReasonKind.SIDE_EFFECT)
            return
        self.pending.note_place("attr", cell, "cell_contents")
        cell.cell_contents = value
        self.pending.record(Effect("cell", cell, None, (value,)))
