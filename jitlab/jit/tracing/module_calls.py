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
from typing import Any

import torch
from torch import nn

from jitlab.jit.guards.sources import AttrSource, ItemSource
from jitlab.jit.reasons import ReasonKind
from jitlab.jit.tracing.module_hooks import has_backward_hooks, has_forward_hooks, hooked_call


class ModuleCalls:
    """Tracer mixin: the function a module call runs (see the module docstring)."""

    def module_call(self, fn: nn.Module, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
        """`(function, args, kwargs)` to interpret for the call `fn(*args, **kwargs)`, or None to
        call the module natively."""
        cls = type(fn)
        if isinstance(fn, torch.jit.ScriptModule):
            return None  # TorchScript runs it (its class's `forward` is no Python function to step into)
        if cls.__call__ is not nn.Module.__call__:
            call = cls.__call__
            if type(call) is types.FunctionType:
                self.class_lookup(cls, "__call__")
                return call, (fn, *args), kwargs
            return None
        if has_backward_hooks(fn):
            self.problem(
                f"module {cls.__name__} has backward hooks (torch attaches them to each call's autograd "
                "graph in Python, which a replayed graph would skip)",
                ReasonKind.NATIVE_CALL,
            )
            return None
        if has_forward_hooks(fn):
            self.notes.append(
                f"module {cls.__name__}: forward hooks interpreted with torch's Module._call_impl"
            )
            return hooked_call(fn, args, kwargs)  # torch's _call_impl, interpreted: hooks are guarded
        source = self.source_of(fn)
        forward = fn.__dict__.get("forward")
        if source is not None and id(fn) not in self._hooked_modules:
            self._hooked_modules.add(id(fn))
            class_forward = forward is None  # an own forward is guarded by identity below
            self.builder.check(
                source,
                _no_hooks_check(fn, class_forward),
                "no hooks on {v}" + (", its class's forward" if class_forward else ""),
            )
        if forward is not None:
            if source is not None:
                self.track(forward, ItemSource(AttrSource(source, "__dict__"), "forward"))
            return forward, args, kwargs
        self.class_lookup(cls, "forward")
        declared = inspect.getattr_static(cls, "forward", None)  # bound as `self.forward` binds it
        if isinstance(declared, staticmethod):
            return declared.__func__, args, kwargs
        if isinstance(declared, classmethod):
            return declared.__func__, (cls, *args), kwargs
        return cls.forward, (fn, *args), kwargs


HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


def _no_hooks_check(module: nn.Module, class_forward: bool) -> str:
    """The guard expression (`{v}`: the module) that the module has no hooks, and with
    `class_forward` no `forward` of its own. torch keeps the hook tables in the instance's
    `__dict__`, so the check reads them there: one attribute lookup instead of five (a module class
    defines `__getattr__`, which makes each lookup slow: 0.2 µs per module more, tens of µs per call
    on a model of a hundred modules). Where the tables are not all in `__dict__`, or the class
    defines one of the names, the tables are read as attributes. (A class that gains a data
    descriptor of one of these names after the capture would not be seen; torch has none.)"""
    own = module.__dict__
    if all(name in own and not hasattr(type(module), name) for name in HOOK_TABLES):
        first, *rest = HOOK_TABLES
        tables = "".join(f" or _md[{name!r}]" for name in rest)
        check = f"not ((_md := {{v}}.__dict__)[{first!r}]{tables})"
        return check + (" and 'forward' not in _md" if class_forward else "")
    check = "not (" + " or ".join(f"{{v}}.{name}" for name in HOOK_TABLES) + ")"
    return check + (" and 'forward' not in {v}.__dict__" if class_forward else "")
