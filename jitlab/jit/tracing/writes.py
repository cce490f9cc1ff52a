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

import types
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.effects.replay import Effect
from jitlab.jit.graph.plain import plain_key
from jitlab.jit.graph.tensor_writes import record_set_data
from jitlab.jit.graph.training_nodes import record_set_grad
from jitlab.jit.guards.kinds import container_base
from jitlab.jit.guards.sources import Source, hashable_key, is_literal_key
from jitlab.jit.reasons import ReasonKind


class Writes:
    """Mixin of `Tracer`: the write hooks of the interpreter."""

    def _write_target(self, obj: Any, what: str) -> Source | None:
        """The source of an outside object about to be changed, or None if the object is fresh."""
        if not self._outside(obj):
            return None
        source = self.source_of(obj) or self.find_source(obj)
        if source is None:
            # a write (or deletion) the entry could not replay: it cannot name the object it changes
            self.problem(f"{what} on a {type(obj).__name__} of unknown origin", ReasonKind.SIDE_EFFECT)
        return source

    def _note_write(self, kind: str, holder: Any, key: Any) -> None:
        """Remember an outside place written (whatever the call writes, even before it reads data: a
        list stored now may get a data-dependent int later); the driver makes the DataInts left
        there plain ints after the call (graph/plain.py)."""
        self.writes.append((kind, holder, key))

    def store_attr(self, obj: Any, name: str, value: Any) -> None:
        self._note_write("attr", obj, name)
        if isinstance(obj, torch.Tensor):
            self.store_tensor_attr(obj, name, value)
            return
        if self.interpreter is not None:
            user_setattr = self.specials.method(type(obj), "__setattr__")
            if user_setattr is not None:
                self.interpreter.call(
                    user_setattr, (obj, name, value), {}
                )  # e.g. EasyDict: self[name] = value
                return
        self.raw_store_attr(obj, name, value, setattr, "attr")

    def store_tensor_attr(self, tensor: torch.Tensor, name: str, value: Any) -> None:
        if (
            name == "data"
            and isinstance(value, torch.Tensor)
            and type(tensor) in (torch.Tensor, nn.Parameter)
        ):
            record_set_data(self.recorder, tensor, value)
            return
        if name == "grad" and (value is None or isinstance(value, torch.Tensor)):
            record_set_grad(self.recorder, tensor, value)
            return
        if name == "requires_grad" and type(value) is bool and self._made_leaf(tensor):
            # `t.requires_grad = flag` on a tensor the call made with no autograd history: a no-op
            # when unchanged (`mask.requires_grad = False`); otherwise `t.requires_grad_(flag)`, a
            # tensor method the recorder records, which only the eager backend keeps (AOTAutograd
            # drops it: the output would not require grad)
            if value == tensor.requires_grad:
                return
            if self.recorder.lazy:
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
        self.problem(f"attribute write .{name} on a tensor", ReasonKind.SIDE_EFFECT)
        setattr(tensor, name, value)

    def _made(self, tensor: torch.Tensor) -> bool:
        """A tensor made by the graph, not an input, parameter or buffer."""
        known = self.recorder.node_of.get(id(tensor))
        return known is not None and known[0] is tensor and known[1].op != "placeholder"

    def _made_leaf(self, tensor: torch.Tensor) -> bool:
        """A plain tensor made by the graph with no autograd history: one whose `requires_grad`
        eager code may set."""
        return type(tensor) is torch.Tensor and self._made(tensor) and tensor.grad_fn is None

    def raw_store_attr(self, obj: Any, name: str, value: Any, write: Any, kind: str) -> None:
        """Write `obj.<name> = value` with `write` (setattr, or object.__setattr__ for the low-level
        write a user `__setattr__` ends with) and record it for replay as effect `kind`."""
        source = self._write_target(obj, f"attribute write .{name}")
        write(obj, name, value)
        if source is not None:
            self.effects.append(Effect(kind, source, name, (value,)))
            self._written.add((id(obj), name))

    def delete_attr(self, obj: Any, name: str) -> None:
        if self.interpreter is not None:
            user_delattr = self.specials.method(type(obj), "__delattr__")
            if user_delattr is not None:
                self.interpreter.call(user_delattr, (obj, name), {})
                return
        source = self._write_target(obj, f"del .{name}")
        delattr(obj, name)
        if source is not None:
            self.effects.append(Effect("delattr", source, name))
            self._written.add((id(obj), name))

    def store_item(self, container: Any, key: Any, value: Any) -> None:
        if isinstance(container, torch.Tensor):
            self._hand_to_torch(container.__setitem__, (key, value), {})
            return
        if self.interpreter is not None:
            user_setitem = self.specials.method(type(container), "__setitem__")
            if user_setitem is not None:
                self.interpreter.call(user_setitem, (container, key, value), {})
                return
        with self.recorder.reading("used as a key or index"):
            self.recorder.use(key)
        self.identity_read(key)  # an object used as a key: guarded by identity (call_objects.py)
        key = plain_key(key)  # hashed or used as an index: read, re-checked, so a plain int from now on
        self._note_write("item", container, key)
        source = self._write_target(container, "item write")
        replayed = value
        if source is not None and type(key) is slice and container_base(type(container)) is list:
            replayed = self.freezer.consumed(value, deep=False)  # the items are copied now (snapshots.py)
        added = self.key_addition(container, key) if source is not None else None
        if source is not None:
            self.note_pre_content(container)
        if isinstance(key, torch.Tensor) and self.recorder.lazy:  # `lst[t] = v` reads Tensor.__index__
            self.recorder.native_depth += 1
            try:
                container[key] = value
            finally:
                self.recorder.native_depth -= 1
        else:
            container[key] = value
        if source is not None:
            if not is_literal_key(key) and not isinstance(key, torch.Tensor):
                self.problem(
                    "item write with a non-literal key on an outside container", ReasonKind.SIDE_EFFECT
                )
            self.effects.append(Effect("item", source, key, (replayed,)))
            self.note_key_added(container, key, added)
            if container_base(type(container)) is dict and is_literal_key(key):
                self._keys_written.setdefault(id(container), set()).add(hashable_key(key))
            else:
                self.forget_appended(container)
                self._mutated.add(id(container))

    def delete_item(self, container: Any, key: Any) -> None:
        if self.interpreter is not None:
            user_delitem = self.specials.method(type(container), "__delitem__")
            if user_delitem is not None:
                self.interpreter.call(user_delitem, (container, key), {})
                return
        self.identity_read(key)
        source = self._write_target(container, "item deletion")
        if source is not None:
            self.note_pre_content(container)
        del container[key]
        if source is not None:
            self.effects.append(Effect("delitem", source, key))
            self.forget_appended(container)
            self.forget_added_keys(container)
            self._mutated.add(id(container))

    def store_global(self, globals_: dict[str, Any], name: str, value: Any) -> None:
        self._note_write("item", globals_, name)
        globals_[name] = value
        self.effects.append(Effect("global", globals_, name, (value,)))

    def delete_global(self, globals_: dict[str, Any], name: str) -> None:
        self.problem(f"del of the global {name}", ReasonKind.SIDE_EFFECT)
        super().delete_global(globals_, name)

    def store_cell(self, cell: types.CellType, value: Any) -> None:
        from jitlab.jit.interpreter.ops_names import EMPTY

        if value is EMPTY:
            self.problem("del of a closure variable of an outside function", ReasonKind.SIDE_EFFECT)
            return
        self._note_write("attr", cell, "cell_contents")
        cell.cell_contents = value
        self.effects.append(Effect("cell", cell, None, (value,)))
