"""How the tracer calls an `nn.Module`: which function runs, and what is guarded so that the same
function runs on a later call.

A module called from interpreted code runs its class's `forward` (or one set on the instance, as
hook libraries do), interpreted, unless hooks make torch's `_call_impl` necessary (forward hooks,
interpreted with it) or impossible (backward hooks, which attach to each call's autograd graph:
the module is called natively). The guards: no hooks on the module, whether it holds its own
`forward`, and the class's `forward` where the class lookup found it (class_lookups.py).
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Protocol

import torch
from torch import nn

from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import AttrSource, ItemSource, Source
from jitlab.jit.reasons import ReasonKind
from jitlab.jit.tracing.class_lookups import ClassLookups, immutable_type
from jitlab.jit.tracing.module_hooks import has_backward_hooks, has_forward_hooks, hooked_call


class ModuleCallTracer(Protocol):
    """What the module calls use of the tracer (its guard builder changes at each graph break, so it
    is read at each guard); tests/jit/test_jit_owned_state.py checks the real one."""

    builder: GuardBuilder
    class_lookups: ClassLookups
    notes: list[str]

    def class_lookup(self, klass: type, name: str) -> None: ...

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def source_of(self, value: object) -> Source | None: ...

    def track(self, value: object, source: Source) -> Any: ...


class ModuleCalls:
    """Owned by the tracer (`tracer.module_calls`): the function a module call runs (see the module
    docstring), and the modules whose hooks are guarded in this segment."""

    def __init__(self, tracer: ModuleCallTracer) -> None:
        self.tracer = tracer
        self._hooked_modules: set[int] = set()

    def new_segment(self) -> None:
        """A graph break ran code the capture cannot see: the modules' hooks are guarded anew."""
        self._hooked_modules.clear()

    def module_call(self, fn: nn.Module, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
        """`(function, args, kwargs)` to interpret for the call `fn(*args, **kwargs)`, or None to
        call the module natively."""
        cls = type(fn)
        if isinstance(fn, torch.jit.ScriptModule):
            return None  # TorchScript runs it (its class's `forward` is no Python function to step into)
        if cls.__call__ is not nn.Module.__call__:
            call = cls.__call__
            if type(call) is types.FunctionType:
                self.tracer.class_lookup(cls, "__call__")
                return call, (fn, *args), kwargs
            return None
        if has_backward_hooks(fn):
            self.tracer.problem(
                f"module {cls.__name__} has backward hooks (torch attaches them to each call's autograd "
                "graph in Python, which a replayed graph would skip)",
                ReasonKind.NATIVE_CALL,
            )
            return None
        if has_forward_hooks(fn):
            self.tracer.notes.append(
                f"module {cls.__name__}: forward hooks interpreted with torch's Module._call_impl"
            )
            return hooked_call(fn, args, kwargs)  # torch's _call_impl, interpreted: hooks are guarded
        source = self.tracer.source_of(fn)
        forward = fn.__dict__.get("forward")
        if source is not None and id(fn) not in self._hooked_modules:
            self._hooked_modules.add(id(fn))
            class_forward = forward is None  # an own forward is guarded by identity below
            text = "no hooks on {v}" + (", its class's forward" if class_forward else "")
            if _tables_in_dict(fn):
                own = AttrSource(source, "__dict__")
                self.tracer.builder.check(own, _no_hooks_in_dict(class_forward), text, described=source)
            else:
                self.tracer.builder.check(source, _no_hooks_check(class_forward), text)
        if forward is not None:
            if source is not None:
                self.tracer.track(forward, ItemSource(AttrSource(source, "__dict__"), "forward"))
            return forward, args, kwargs
        self.tracer.class_lookup(cls, "forward")
        declared = inspect.getattr_static(cls, "forward", None)  # bound as `self.forward` binds it
        if isinstance(declared, staticmethod):
            return declared.__func__, args, kwargs
        if isinstance(declared, classmethod):
            return declared.__func__, (cls, *args), kwargs
        return cls.forward, (fn, *args), kwargs

    def module_attr_source(self, module: nn.Module, source: Source, name: str) -> AttrSource:
        """`source.name` for an attribute the module holds in its `__dict__` (a flag, a number, its
        `_parameters` table), read there by the generated code when that is the same as reading the
        attribute: no class of its method resolution order defines `name` or `__getattribute__`
        (guarded: a data descriptor added there later would come first). The module's identity
        check guards its class (GuardBuilder.id_match)."""
        attr = AttrSource(source, name)
        own = getattr(module, "__dict__", None)
        cls = type(module)
        if (
            type(own) is dict
            and name in own
            and cls.__getattribute__ is object.__getattribute__
            # the guards on the classes cost about what a dict read saves: worth it for a name read
            # on many modules of a class (each conv's `stride`), not for one read through a deep
            # hierarchy (a transformers model's `config`): from the read that makes up for them on
            and self.tracer.builder.count((cls, name)) >= 2 * _mutable_classes(cls)
            and not self.tracer.class_lookups.guarded_lookup(
                self.tracer.class_lookups.guard_class_lookup, cls, name
            )
        ):
            # and that the classes still take attributes the usual way (no `__getattribute__` of
            # their own): guarded once per class, like the name
            self.tracer.class_lookups.guarded_lookup(
                self.tracer.class_lookups.guard_class_lookup, cls, "__getattribute__"
            )
            self.tracer.builder.read_through_instance_dict(attr)
        return attr


def _mutable_classes(cls: type) -> int:
    """How many classes of `cls`'s method resolution order can change (each gets a guard)."""
    return sum(not immutable_type(klass) for klass in cls.__mro__)


HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


def _tables_in_dict(module: nn.Module) -> bool:
    """Whether the module keeps its hook tables in its instance `__dict__` (torch does), under names
    its class does not define: then the guard reads them there."""
    own = module.__dict__
    return all(name in own and not hasattr(type(module), name) for name in HOOK_TABLES)


def _no_hooks_in_dict(class_forward: bool) -> str:
    """The guard expression (`{v}`: the module's `__dict__`, in a variable the module's other guards
    share) that the module has no hooks, and with `class_forward` no `forward` of its own. Reading
    the tables there is one dict lookup each instead of an attribute lookup, slow on an `nn.Module`
    (a class with `__getattr__`). (A class that gains a data descriptor of one of these names after
    the capture would not be seen; torch has none.)"""
    check = "not (" + " or ".join(f"{{v}}[{name!r}]" for name in HOOK_TABLES) + ")"
    return check + (" and 'forward' not in {v}" if class_forward else "")


def _no_hooks_check(class_forward: bool) -> str:
    """The same, for a module whose hook tables are not all in its `__dict__`: read as attributes."""
    check = "not (" + " or ".join(f"{{v}}.{name}" for name in HOOK_TABLES) + ")"
    return check + (" and 'forward' not in {v}.__dict__" if class_forward else "")
