"""Reading torch's module containers (`nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict`) as model code
walks them: a `for` loop, `enumerate`/`list`/`zip` (through the lookasides), `self.layers[i]` and
`self.layers[:n]`; and any module's direct submodules listed by torch (`self.children()`,
`named_children()`, a ModuleDict's `items()`, `values()`, `keys()`).

Their `__iter__` and `__getitem__` are torch's own, run natively under a trace rule (trace_rules.py):
stepping into them would read `_modules.values()`, and native code handed a dict reads it whole, so
every submodule's tables and flags below would be guarded on every call. Modelled here instead: the
container's keys are guarded, and each submodule taken is registered with its source, to be guarded
as the program then uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import torch.nn as nn

from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.kinds import CHILDREN_VIEWS, MODULE_SEQUENCES, module_container
from jitlab.jit.guards.sources import AttrSource, ItemSource, Source
from jitlab.jit.tracing.appended_reads import ReadsAfterWrites
from jitlab.jit.tracing.lookasides import Lookasides, register_lookaside


class ContainerTracer(Protocol):
    """What the module containers use of the tracer (its guard builder changes at each graph break,
    so it is read at each guard); tests/jit/test_jit_owned_state.py checks the real one."""

    after_writes: ReadsAfterWrites
    builder: GuardBuilder

    def class_lookup(self, klass: type, name: str) -> None: ...

    def module_attr_source(self, module: nn.Module, source: Source, name: str) -> AttrSource: ...

    def source_of(self, value: object) -> Source | None: ...

    def track(self, value: object, source: Source) -> Any: ...

    def is_outside(self, obj: object) -> bool: ...


class ModuleContainers:
    """Owned by the tracer (`tracer.module_containers`): iteration and indexing of outside module
    containers."""

    def __init__(self, tracer: ContainerTracer) -> None:
        self.tracer = tracer

    def models_iteration(self, obj: object) -> bool:
        """Whether iterating `obj` as a `for` loop does (`get_iter`) guards less than handing it whole
        to native code: an outside torch module container (`enumerate(self.layers)`)."""
        return (
            module_container(type(obj)) is not None
            and self.tracer.is_outside(obj)
            and self.tracer.source_of(obj) is not None
        )

    def iter_module_container(self, obj: object, source: Source) -> Iterator[Any] | None:
        """The iteration of an outside module container using torch's own `__iter__`; None for others."""
        t = type(obj)
        container = module_container(t)
        if container is None:
            return None
        self.tracer.class_lookup(t, "__iter__")
        keys = list(obj._modules)
        mods = self.tracer.module_attr_source(obj, source, "_modules")
        self.tracer.builder.expr(mods, "list({v})", keys)
        if container is nn.ModuleDict:
            return iter(keys)
        return iter([self.tracer.track(obj._modules[k], ItemSource(mods, k)) for k in keys])

    def module_item(self, container: object, key: object, value: object, source: Source) -> tuple[bool, Any]:
        """`container[key]` of an outside module container, read natively as `value`: (modelled, the
        value to hand on). Not modelled (False): a subclass, or another kind of key."""
        t = type(container)
        if t in MODULE_SEQUENCES and type(key) in (int, slice):
            # torch's own, which the tracer models (trace_rules.py)
            self.tracer.class_lookup(t, "__getitem__")
            keys = list(container._modules)
            mods = self.tracer.module_attr_source(container, source, "_modules")
            if type(key) is int:
                self.tracer.builder.length(source, len(keys), "len({v}._modules)")
                return True, self.tracer.track(value, ItemSource(mods, keys[key]))
            # `self.layers[:n]`: a new container of the same submodules, each read as it is used
            self.tracer.builder.expr(mods, "list({v})", keys)
            for name in keys[key]:
                self.tracer.track(container._modules[name], ItemSource(mods, name))
            return True, value
        if t is nn.ModuleDict and type(key) is str:
            return True, self.tracer.track(
                value, ItemSource(self.tracer.module_attr_source(container, source, "_modules"), key)
            )
        return False, value

    def guard_module_index_missing(self, container: nn.Module, source: Source) -> None:
        """`self.layers[9]` past the end raised IndexError: its length decided it."""
        self.tracer.builder.length(source, len(container._modules), "len({v}._modules)")

    def guard_children(self, module: object, values: bool) -> None:
        """torch is about to list the direct submodules of `module` from its `_modules` table
        (`named_children`, a ModuleDict's `items`, `values`, `keys`), natively. The table's names
        are guarded, in order, and with `values` each entry (a submodule by identity, or None):
        what the listing yields follows from them, `named_children`'s skipping of None and of a
        submodule met twice included. Interpreted, the listing read `_modules.items()` by native code,
        which guarded every module of the tree below (a third of regnet's and densenet's guards).
        A module made in the call, or of unknown origin, has nothing to guard."""
        table = getattr(module, "__dict__", {}).get("_modules")
        source = self.tracer.source_of(module)
        if (
            type(table) is not dict
            or source is None
            or not self.tracer.is_outside(module)
            or not self.tracer.is_outside(table)
        ):
            return
        mods = self.tracer.module_attr_source(module, source, "_modules")
        if self.tracer.after_writes.guard_after_mutation(table):
            return  # changed earlier in the call: its content from before is guarded, or the capture is not cached
        keys = list(table)
        self.tracer.builder.expr(mods, "list({v})", keys)
        if values:
            for key in keys:
                self.tracer.track(table[key], ItemSource(mods, key))


def _children_lookaside(view: Callable[[nn.Module], Any]) -> Callable[[Lookasides, tuple, dict], Any]:
    """The lookaside of one of torch's CHILDREN_VIEWS: guard the table, then run `view` natively on
    it (as a plain native call, which would guard the whole module handed to it)."""
    values = view is not nn.ModuleDict.keys

    def guard_then_run(lookasides: Lookasides, args: tuple, kwargs: dict) -> Any:
        if len(args) != 1 or kwargs or not isinstance(args[0], nn.Module):
            return None
        lookasides.tracer.guard_children(args[0], values)
        return lambda: view(args[0])

    return guard_then_run


for _view in CHILDREN_VIEWS:
    register_lookaside(_view, _children_lookaside(_view))
