"""Native calls the tracer understands exactly rather than guarding what they may read: the builtins
`len`, `getattr`, `hasattr`, `setattr`, `delattr`, `type` and `print`, `x in d` on an outside dict,
binding a function with `__get__`, the builtins that read their caller's frame (`globals()`,
`locals()`, `eval`), and `object.__setattr__` / `object.__getattribute__` called by a user's
`__setattr__` or `__getattribute__`. Split from native_calls.py, which asks `special_call` first.
"""

from __future__ import annotations

import builtins
import operator
import types
from collections.abc import Callable
from typing import Any, Protocol

import torch
import torch.nn as nn

from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.effects.replay import Effect
from jitlab.jit.effects.snapshots import Freezer
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.kinds import CONTAINERS, container_base
from jitlab.jit.guards.sources import (
    AttrSource,
    Source,
    hashable_key,
    is_constant_key,
    is_literal_key,
    literal,
)
from jitlab.jit.interpreter import Interpreter
from jitlab.jit.interpreter.frame import frame_locals
from jitlab.jit.reasons import ReasonKind
from jitlab.jit.tracing.appended_reads import ReadsAfterWrites
from jitlab.jit.tracing.class_lookups import ClassLookups
from jitlab.jit.tracing.lookasides import NOT_HANDLED, Lookasides, Specials
from jitlab.jit.tracing.training_calls import PausingRecorder
from jitlab.jit.tracing.user_getattribute import UserAttributeReads
from jitlab.jit.tracing.writes import WriteHooks

#: what `special_call` returns for a call it does not handle (None is a call's result)
NOT_SPECIAL = object()
_PURE_BUILTINS = {
    "abs", "all", "any", "ascii", "bin", "bool", "callable", "chr", "complex", "dict", "divmod",
    "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "int", "isinstance",
    "issubclass", "iter", "len", "list", "map", "max", "min", "next", "oct", "ord", "pow", "range",
    "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "type", "zip",
    "object", "super", "property", "staticmethod", "classmethod", "id",
}  # fmt: skip


class BuiltinTracer(Protocol):
    """What the builtin calls use of the tracer (its guard builder changes at each graph break, so it
    is read at each guard); tests/jit/test_jit_owned_state.py checks the real one."""

    after_writes: ReadsAfterWrites
    attribute_reads: UserAttributeReads
    builder: GuardBuilder
    class_lookups: ClassLookups
    freezer: Freezer
    lookasides: Lookasides
    side_effects: SideEffects
    specials: Specials
    writer: WriteHooks

    @property
    def interpreter(self) -> Interpreter | None: ...

    @property
    def recorder(self) -> PausingRecorder: ...

    def deep_track(self, value: object, depth: int = 0) -> None: ...

    def delete_attr(self, obj: object, name: str) -> None: ...

    def length(self, obj: object) -> int: ...

    def load_attr(self, obj: object, name: str) -> Any: ...

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def source_of(self, value: object) -> Source | None: ...

    def store_attr(self, obj: object, name: str, value: object) -> None: ...

    def track(self, value: object, source: Source) -> Any: ...

    def is_outside(self, obj: object) -> bool: ...


class BuiltinCalls:
    """Owned by the tracer (`tracer.builtin_calls`): the native calls understood exactly (see the
    module docstring)."""

    def __init__(self, tracer: BuiltinTracer) -> None:
        self.tracer = tracer

    def special_call(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        if (
            type(fn) is types.MethodWrapperType
            and fn.__name__ == "__get__"
            and type(fn.__self__) is types.FunctionType
        ):
            # `func.__get__(obj, cls)` binds a method (a scheduler's wrapper of `opt.step` does): it
            # reads nothing of `obj`, which is no whole read of it
            return fn(*args, **kwargs)
        if fn is type and len(args) == 1 and not kwargs:
            cls = type(args[0])
            source = self.tracer.source_of(args[0])
            if (
                source is not None
                and self.tracer.is_outside(args[0])
                and not isinstance(args[0], torch.Tensor)
            ):
                return self.tracer.track(cls, AttrSource(source, "__class__"))  # class attributes get sources
            return cls
        if type(fn) is not types.BuiltinFunctionType or getattr(fn, "__self__", None) is not builtins:
            if fn is operator.contains and len(args) == 2:
                if self.tracer.interpreter is not None:
                    result = self.tracer.lookasides.contains(*args)
                    if result is not NOT_HANDLED:
                        return result
                container, item = args
                if (
                    self.tracer.source_of(container) is not None
                    and container_base(type(container)) is dict
                    and (is_literal_key(item) or is_constant_key(item))
                ):
                    result = item in container
                    written = self.tracer.side_effects.keys_written(container) or ()
                    literal_item = is_literal_key(item)
                    if (
                        literal_item
                        and hashable_key(item) in written
                        and not self.tracer.side_effects.mutated(container)
                    ):
                        return result  # the call wrote that key itself
                    if self.tracer.is_outside(container) and (
                        written or not self.tracer.after_writes.guard_after_mutation(container)
                    ):
                        source = self.tracer.source_of(container)
                        if literal_item:
                            self.tracer.builder.expr(source, f"{literal(item, True)} in {{v}}", result)
                        else:
                            key = self.tracer.builder.const(item, "K")
                            self.tracer.builder.expr(source, f"{key} in {{v}}", result, f"{item!r} in {{v}}")
                    return result
                return NOT_SPECIAL
            return self._low_level_attribute_call(fn, args, kwargs)
        name = fn.__name__
        if name == "len" and len(args) == 1 and not kwargs:
            return self.tracer.length(args[0])
        if name == "print":
            return self._print(args, kwargs)
        if name == "getattr" and len(args) in (2, 3) and type(args[1]) is str:
            try:
                return self.tracer.load_attr(args[0], args[1])
            except AttributeError:
                if len(args) == 3:
                    self.guard_missing_attr(args[0], args[1])
                    return args[2]
                raise
        if name == "hasattr" and len(args) == 2 and type(args[1]) is str:
            if self._has_user_getattr(args[0]):
                try:  # the user's __getattr__ runs interpreted, its reads guarded
                    self.tracer.load_attr(args[0], args[1])
                except AttributeError:
                    return False
                return True
            result = hasattr(args[0], args[1])
            source = self.tracer.source_of(args[0])
            if isinstance(args[0], torch.Tensor):
                return result
            if source is not None and self.tracer.is_outside(args[0]):
                if result or not self._guard_module_lacks(args[0], source, args[1]):
                    self.tracer.builder.expr(source, f"hasattr({{v}}, {args[1]!r})", result)
            else:  # made in the call: what its class holds (or lacks) under the name is guarded
                self.tracer.class_lookups.fresh_attr(args[0], args[1])
            return result
        if name == "setattr" and len(args) == 3 and type(args[1]) is str:
            self.tracer.store_attr(*args)
            return None
        if name == "delattr" and len(args) == 2 and type(args[1]) is str:
            self.tracer.delete_attr(*args)
            return None
        if name == "isinstance" or name == "issubclass":
            return fn(*args, **kwargs)

        if name in ("vars", "globals", "locals", "input", "open", "exec", "eval", "compile", "breakpoint"):
            self.tracer.problem(f"builtin {name}() is not supported", ReasonKind.UNSUPPORTED_CODE)
            return self._in_callers_frame(fn, name, args, kwargs)
        if name not in _PURE_BUILTINS:
            return NOT_SPECIAL
        return NOT_SPECIAL

    def _in_callers_frame(self, fn: Callable[..., Any], name: str, args: tuple, kwargs: dict) -> Any:
        """Run a builtin that reads its caller's frame as the program's frame would: called natively
        from the interpreter it would see the interpreter's own globals and locals, and the call the
        capture gives up on still returns the program's result."""
        frames = getattr(self.tracer.interpreter, "frames", None)
        if not frames:
            return NOT_SPECIAL
        frame = frames[-1]
        if name == "globals":
            return frame.globals
        if name in ("locals", "vars") and not args and not kwargs:
            return frame_locals(frame)
        if (
            name in ("eval", "exec")
            and not kwargs
            and (len(args) == 1 or (len(args) == 2 and args[1] is None))
        ):
            return fn(args[0], frame.globals, frame_locals(frame))  # the caller's namespaces
        return NOT_SPECIAL

    def _has_user_getattr(self, obj: object) -> bool:
        t = type(obj)
        return self.tracer.interpreter is not None and (
            self.tracer.specials.method(t, "__getattr__") is not None
            or self.tracer.specials.method(t, "__getattribute__") is not None
        )

    def _low_level_attribute_call(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """`object.__setattr__(obj, k, v)`, `super().__setattr__(k, v)`, `object.__getattribute__(obj, k)`
        and the like, which user `__setattr__`/`__getattribute__` methods end with: the plain write or
        read, recorded and guarded like an attribute access of interpreted code."""
        t = type(fn)
        if kwargs or t not in (types.WrapperDescriptorType, types.MethodWrapperType):
            return NOT_SPECIAL
        name = fn.__name__
        if getattr(fn, "__objclass__", None) is not object:
            return NOT_SPECIAL
        if t is types.MethodWrapperType:
            if isinstance(fn.__self__, type):
                return NOT_SPECIAL
            args = (fn.__self__, *args)
        if name == "__setattr__" and len(args) == 3 and type(args[1]) is str:
            if isinstance(args[0], torch.Tensor):
                return NOT_SPECIAL
            self.tracer.writer.raw_store_attr(args[0], args[1], args[2], object.__setattr__, "rawattr")
            return None
        if name == "__getattribute__" and len(args) == 2 and type(args[1]) is str:
            if isinstance(args[0], torch.Tensor):
                return NOT_SPECIAL
            return self.tracer.attribute_reads.generic_read(args[0], args[1])
        return NOT_SPECIAL

    def guard_missing_attr(self, obj: object, name: str) -> None:
        if self._has_user_getattr(obj):
            return  # the interpreted __getattr__ raised: its own reads are guarded
        source = self.tracer.source_of(obj)
        if source is not None and self.tracer.is_outside(obj):
            if not self._guard_module_lacks(obj, source, name):
                self.tracer.builder.expr(source, f"hasattr({{v}}, {name!r})", False)
        else:
            # an object made in the call (or by a native call): its own attributes are what the
            # call made, but its class may gain `name` between calls (`getattr(obj, "extra", 0.0)`
            # on a fresh object, then `Holder.extra = -0.5`: the old default was served)
            self.tracer.class_lookups.fresh_attr(obj, name)

    def _guard_module_lacks(self, module: object, source: Source, name: str) -> bool:
        """Guard `hasattr(module, name) is False` on a module by what makes it so (its class fixed):
        no class of its method resolution order defines `name`, and neither its `__dict__` nor its
        parameter, buffer and module tables hold it. Whether it did. `hasattr` itself goes through
        `nn.Module.__getattr__`, which raises an AttributeError with a formatted message: about
        0.9 µs per check on every hit (transformers' attention layers ask for
        `num_key_value_groups`), against 0.1 µs for four dict lookups."""
        cls = type(module)
        if not (
            isinstance(module, nn.Module)
            and type(getattr(module, "__dict__", None)) is dict
            and cls.__getattr__ is nn.Module.__getattr__
            and cls.__getattribute__ is object.__getattribute__
        ):
            return False
        if not self.tracer.builder.type_fixed(source):  # a jitted module itself, a constant
            self.tracer.builder.type_match(source, module)
        lookups = self.tracer.class_lookups
        for special in ("__getattribute__", "__getattr__"):
            lookups.guarded_lookup(lookups.guard_class_lookup, cls, special)
        if lookups.guarded_lookup(lookups.guard_class_lookup, cls, name):
            return False  # a class defines it (a property that raised): left to hasattr itself
        own = self.tracer.attribute_reads.instance_dict_source(module, source)
        tables = " or ".join(f"{name!r} in {{v}}[{t!r}]" for t in ("_parameters", "_buffers", "_modules"))
        self.tracer.builder.check(
            own, f"not ({name!r} in {{v}} or {tables})", f"{{v}} has no attribute {name!r}", source
        )
        return True

    def _print(self, args: tuple, kwargs: dict) -> None:
        if kwargs.get("file") is not None:
            self.tracer.problem("print(file=...) is not replayed", ReasonKind.SIDE_EFFECT)
        for value in args:
            if type(value) in CONTAINERS:
                self.tracer.deep_track(value)
        with self.tracer.recorder.pause():
            print(*args, **kwargs)
        # printed when replayed: as they are now, not as the rest of the call leaves them (snapshots.py)
        frozen = tuple(self.tracer.freezer.consumed(value) for value in args)
        self.tracer.side_effects.record(Effect("print", None, None, frozen, dict(kwargs)))
        return None
