"""The tracer: the interpreter's hooks during a capture.

It follows where every outside value came from (`source_of`), adds a guard for each read (via
`GuardBuilder`), registers outside tensors as graph inputs, records side effects for replay, and
notes every *problem* that makes the capture unusable for later calls (the capture's own call is
always a faithful execution, so a problem only means "do not cache").
"""

from __future__ import annotations

import builtins
import os
import types
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.graph.data_values import DataInt
from jitlab.jit.graph.plain import plain_key
from jitlab.jit.guards.builder import SCALAR_TYPES
from jitlab.jit.guards.kinds import (
    CONTAINERS,
    LIBRARY_MODULE_ROOTS,
    MODULE_SEQUENCES,
    container_base,
    is_iterator,
    module_root,
)
from jitlab.jit.guards.sources import (
    AttrSource,
    ConstSource,
    ItemSource,
    is_constant_key,
    is_literal_key,
)
from jitlab.jit.interpreter.hooks import class_read_by_jitlab, is_user_code
from jitlab.jit.interpreter.sites import TRUTH, resumable
from jitlab.jit.reasons import ReasonKind
from jitlab.jit.tracing import (
    checkpoint_lookaside,  # noqa: F401 - registers torch.utils.checkpoint's lookaside
    exception_state,  # noqa: F401 - registers sys.exc_info's lookaside
    legacy_tensors,  # noqa: F401 - registers the legacy constructors
    made_parameters,  # noqa: F401 - registers nn.Parameter's lookaside
    numpy_tensors,  # noqa: F401 - registers torch.from_numpy's lookaside
)
from jitlab.jit.tracing.dynamo_patches import unpatched_module_init
from jitlab.jit.tracing.jitted import Jitted
from jitlab.jit.tracing.lookasides import BUILTIN_CALLABLE_TYPES
from jitlab.jit.tracing.module_hooks import (
    MUTABLE_LIBRARY_GLOBALS,
)
from jitlab.jit.tracing.native_reach import stepped_outside_iterator
from jitlab.jit.tracing.trace_rules import guards_globals
from jitlab.jit.tracing.tracer_state import TracerState
from jitlab.jit.tracing.training_calls import optimizer_method, prepare_optimizer_state


class Tracer(TracerState):
    """Hooks that record sources, guards, tensor inputs and effects: the interpreter's hooks, on the
    state and the tracking of `TracerState` (tracer_state.py) and the owners it holds."""

    # ------------------------------------------------------------ decisions
    def entering(self, func: types.FunctionType, bound: dict[str, Any]) -> None:
        if not self.is_outside(func):
            return
        code = func.__code__
        fsource = ConstSource(self.builder.const(func, "F"), func.__qualname__)
        kwdefaults = func.__kwdefaults__
        if is_user_code(code):
            # what the program's function runs: its code and defaults are writable attributes
            # (`f.__code__ = ...`, `f.__defaults__ = (5.0,)`), one check per function stepped into
            # (library functions, interpreted too, are taken as they are, as their modules' globals)
            code_const = self.builder.const(code, "CODE")
            defaults_const = self.builder.const(func.__defaults__, "DEF")
            check = f"{{v}}.__code__ is {code_const} and {{v}}.__defaults__ is {defaults_const}"
            if kwdefaults is not None:  # a dict, changed in place too: its items are guarded below
                check += f" and {{v}}.__kwdefaults__ is {self.builder.const(kwdefaults, 'KWD')}"
            self.builder.check(fsource, check, "{v} runs the same code with the same defaults")
        defaults = func.__defaults__ or ()
        first = code.co_argcount - len(defaults)
        for i, value in enumerate(defaults):
            name = code.co_varnames[first + i]
            if bound.get(name) is value and type(value) not in SCALAR_TYPES:
                self.track(value, ItemSource(AttrSource(fsource, "__defaults__"), i))
        for name, value in (kwdefaults or {}).items():
            if bound.get(name) is value and (type(value) not in SCALAR_TYPES or is_user_code(code)):
                self.track(value, ItemSource(AttrSource(fsource, "__kwdefaults__"), name))

    def native_user_code(self, func: types.FunctionType, reason: str) -> None:
        # the interpreter's reasons (an opcode without handler, async code, calls nested too deep) are
        # all code it does not run; it names no kind itself (it imports nothing of jitlab.jit)
        self.unseen_effects = True
        what = "class statement" if func is builtins.__build_class__ else "user function"
        self.problem(f"{what} ran natively: {reason}", ReasonKind.UNSUPPORTED_CODE)

    def intercept_call(self, fn: object, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
        if type(fn) is types.MethodType:
            return prepare_optimizer_state(self.recorder, fn, args, kwargs)  # None (training_calls.py)
        if type(fn) is types.FunctionType:  # torch.compile ran (dynamo_patches.py); torch.optim's opt-outs
            original = unpatched_module_init(fn) or optimizer_method(fn, args, kwargs)
            return (original, args, kwargs) if original is not None else None

        if isinstance(fn, Jitted):
            return fn.wrapped, args, kwargs  # a jitted callable inside the program: capture what it runs
        if not isinstance(fn, nn.Module):
            if isinstance(fn, BUILTIN_CALLABLE_TYPES):
                return None
            call = self.specials.method(type(fn), "__call__")  # an object with a user-written __call__
            if call is None:
                return None
            self.class_lookup(type(fn), "__call__")
            return call, (fn, *args), kwargs
        return self.module_calls.module_call(fn, args, kwargs)

    # ------------------------------------------------------------ writes (writes.py)
    def store_attr(self, obj: object, name: str, value: object) -> None:
        self.writer.store_attr(obj, name, value)

    def delete_attr(self, obj: object, name: str) -> None:
        self.writer.delete_attr(obj, name)

    def store_item(self, container: object, key: object, value: object) -> None:
        self.writer.store_item(container, key, value)

    def delete_item(self, container: object, key: object) -> None:
        self.writer.delete_item(container, key)

    def store_global(self, globals_: dict[str, Any], name: str, value: object) -> None:
        self.writer.store_global(globals_, name, value)

    def delete_global(self, globals_: dict[str, Any], name: str) -> None:
        self.writer.delete_global(globals_, name)
        super().delete_global(globals_, name)

    def store_cell(self, cell: types.CellType, value: object) -> None:
        self.writer.store_cell(cell, value)

    # ------------------------------------------------------------ reads
    def load_global(self, globals_: dict[str, Any], name: str) -> Any:
        value = super().load_global(globals_, name)
        if name not in globals_:
            return value  # a builtin
        if not guards_globals(globals_) and (globals_.get("__name__"), name) not in MUTABLE_LIBRARY_GLOBALS:
            return value  # library module namespaces are taken as constant
        label = f"{globals_.get('__name__', '?')}.globals"
        gsource = ConstSource(self.builder.const(globals_, "G"), label)
        return self.track_read(value, ItemSource(gsource, name), globals_, name)

    def load_attr(self, obj: object, name: str) -> Any:
        if name == "shape" and isinstance(obj, torch.Tensor):
            lazy = self.recorder.lazy_shape(obj, "shape", ())
            if lazy is not None:
                return lazy
        if type(obj) is float or type(obj) is DataInt:
            self.recorder.use(obj)  # `k.real`, `f.is_integer`: Python reads the number
        if self.interpreter is not None and not isinstance(obj, torch.Tensor):
            t = type(obj)
            user_getattribute = self.specials.method(t, "__getattribute__")
            user_getattr = self.specials.method(t, "__getattr__")
            if user_getattribute is not None or user_getattr is not None:
                return self.attribute_reads.load_attr_through_user_code(
                    obj, name, user_getattribute, user_getattr
                )
        try:
            value = getattr(obj, name)
        except AttributeError:
            if not isinstance(obj, torch.Tensor) and not self.side_effects.attr_written(obj, name):
                self.builtin_calls.guard_missing_attr(
                    obj, name
                )  # the program may catch it and go another way
            raise
        return self.tracked_attr(obj, name, value)

    def tracked_attr(self, obj: object, name: str, value: object, generic: bool = False) -> Any:
        """`value` was read as `obj.<name>` (`generic`: by `object.__getattribute__(obj, name)`, see
        user_getattribute.py): guard it (and register it) when `obj` is an outside object."""
        if isinstance(obj, torch.Tensor):
            return self._tensor_attr(obj, name, value)
        if not self.is_outside(obj):
            self.class_lookups.fresh_attr(obj, name)
            return value
        source = self.source_of(obj)
        if source is None:  # made by a native call: what it found in its class is still guarded
            self.class_lookups.fresh_attr(obj, name)
            return value
        if isinstance(obj, types.ModuleType) and module_root(obj) in LIBRARY_MODULE_ROOTS:
            return value
        if type(obj) is types.CodeType:
            # immutable: its identity fixes every attribute. Guarding `code.co_varnames` again
            # cost a tuple comparison per read on Python 3.11, which builds a new tuple per read
            # (transformers' decorators read it: 16 guards in PLBart's training step)
            self.builder.id_match(source, obj)
            return value
        if self.side_effects.attr_written(obj, name):
            return value
        if (
            isinstance(value, (types.MethodType, types.BuiltinMethodType, types.MethodWrapperType))
            and getattr(value, "__self__", None) is obj
            and self.class_lookups.guarded_lookup(self.class_lookups.guard_method_lookup, obj, source, name)
        ):
            return value
        if self.after_writes.guard_after_mutation(obj):
            return value
        if isinstance(obj, nn.Module):
            if name in obj.__dict__:
                return self.track(value, self.module_attr_source(obj, source, name))
            for table in ("_parameters", "_buffers", "_modules"):
                # a ScriptModule keeps no tables of its own (its `__getattr__` reads those of the
                # script module it wraps): its attributes are then guarded as read, by name
                if name in obj.__dict__.get(table, ()):
                    return self.track(value, ItemSource(self.module_attr_source(obj, source, table), name))
        if generic:
            return self.track_read(
                value, self.attribute_reads.generic_attr_source(obj, source, name), obj, name
            )
        return self.track_read(value, AttrSource(source, name), obj, name)

    def _tensor_attr(self, tensor: torch.Tensor, name: str, value: object) -> Any:
        """An attribute of a tensor: what torch defines (`shape`, `dtype`, `grad`) is the graph's;
        one the program set on an outside tensor (`weight.scale = 2.0`, kept in the tensor's own
        `__dict__`) is guarded as read, as an object's attribute is."""
        if name not in getattr(tensor, "__dict__", ()) or not self.is_outside(tensor):
            return value
        source = self.source_of(tensor)
        if source is None or self.side_effects.attr_written(tensor, name):
            return value
        return self.track_read(value, AttrSource(source, name), tensor, name)

    def load_item(self, container: object, key: object) -> Any:
        if isinstance(container, torch.Tensor):
            return self.hand_to_torch(container.__getitem__, (key,), {})
        if container is os.environ and type(key) is str:  # one variable, guarded (environment.py)
            value = self.native_calls.read_environment(key)
            if value is None:
                raise KeyError(key)
            return value
        with self.recorder.reading("used as a key or index"):
            self.recorder.use(key)
        self.call_objects.identity_read(key)  # an object used as a key: guarded by identity (call_objects.py)
        if container_base(type(container)) is dict:
            key = plain_key(key)  # hashed: read and re-checked, as an item write does (writes.py)
        missing = getattr(type(container), "__missing__", None)
        if missing is not None and self.is_outside(container) and key not in container:
            self.initialising = True  # lazily made state (a user's optimizer's): the next call is captured
            self.problem(
                f"reading a missing key of an outside {type(container).__name__} inserts it",
                ReasonKind.SIDE_EFFECT,
            )
        try:
            value = self.native_calls.native_getitem(container, key)
        except (KeyError, IndexError):
            self._guard_missing_item(container, key)  # the program may catch it and go another way
            raise
        if type(key) is slice and container_base(type(container)) in (list, tuple):
            return self._slice(container, key, value)
        if not self.is_outside(container):
            return value
        source = self.source_of(container)
        if source is None:
            return value
        written = self.side_effects.keys_written(container)
        if written is not None and not self.side_effects.mutated(container) and is_literal_key(key):
            if self.side_effects.key_written(container, key):
                return value  # written by this call: the replay writes it, nothing to guard
        elif type(key) is int and (pre := self.after_writes.appended_prefix(container)) is not None:
            return self.after_writes.appended_item(container, key, value, pre)
        elif self.after_writes.guard_after_mutation(container):
            return value
        t = type(container)
        if container_base(t) in CONTAINERS and is_literal_key(key):
            if type(key) is int and key < 0:
                self.builder.length(source, len(container))
            return self.track_read(value, ItemSource(source, key), container, key)
        if container_base(t) is dict and is_constant_key(key):
            return self.track(value, self.whole_reads.constant_key_source(source, key))
        modelled, found = self.module_containers.module_item(container, key, value, source)
        if modelled:
            return found
        self.deep_track(container)
        return value

    def _slice(self, container: list | tuple, key: slice, value: object) -> Any:
        """`xs[a:b]` of a list or tuple is a new container: fresh, with its items guarded where they
        come from (the length of `xs`, and each item in the range) when `xs` is an outside one."""
        source = self.source_of(container)
        pre = (
            self.after_writes.appended_prefix(container)
            if source is not None and self.is_outside(container)
            else None
        )
        if pre is not None:
            self.after_writes.appended_slice_items(container, key, pre)
        elif (
            self.is_outside(container)
            and source is not None
            and not self.after_writes.guard_after_mutation(container)
        ):
            self.builder.length(source, len(container))
            for i in range(*key.indices(len(container))):
                self.track(container[i], ItemSource(source, i))
        elif self.is_outside(container):
            return value  # of unknown origin: its items have no source either
        return self.fresh(value) if type(value) is list else value

    def _guard_missing_item(self, container: object, key: object) -> None:
        source = self.source_of(container)
        if source is None or not self.is_outside(container):
            return
        if type(container) in MODULE_SEQUENCES:
            if is_literal_key(key):
                self.module_containers.guard_module_index_missing(container, source)
            return
        self.after_writes.guard_missing_item(container, key, source)

    def load_cell(self, cell: types.CellType, owner_is_fresh: bool) -> Any:
        value = cell.cell_contents
        source = ConstSource(self.builder.const(cell, "CELL"), "closure cell")
        return self.track_read(value, AttrSource(source, "cell_contents"), cell, "cell_contents")

    def bound_self(self, method: types.MethodType) -> Any:
        """A bound method kept outside the call (`BOUND = obj.apply`, `self.fn = other.forward`) is
        the only way to its object: that object gets its source through the method, so that what
        the method's code reads of it is guarded. An object already known is left as it is."""
        obj = method.__self__
        if self.source_of(obj) is not None or not self.is_outside(obj) or not self.is_outside(method):
            return obj
        source = self.source_of(method)
        return obj if source is None else self.track(obj, AttrSource(source, "__self__"))

    def length(self, obj: object) -> int:
        if isinstance(obj, torch.Tensor):
            lazy = self.recorder.lazy_shape(obj, "__len__", ())
            if lazy is not None:
                return lazy
        if self.interpreter is not None and self.specials.method(type(obj), "__len__") is not None:
            return self.lookasides.length(obj)  # a user __len__, interpreted
        n = len(obj)
        source = self.source_of(obj)
        if source is not None and self.is_outside(obj) and not isinstance(obj, torch.Tensor):
            if not self.after_writes.size_guarded_before(obj) and not self.after_writes.guard_after_mutation(
                obj
            ):
                if isinstance(obj, (nn.ModuleList, nn.Sequential, nn.ModuleDict)):
                    self.builder.length(source, n, "len({v}._modules)")
                else:
                    self.builder.length(source, n)
        return n

    @resumable(TRUTH)
    def truth(self, value: object) -> bool:
        self.recorder.use(value)
        if self.interpreter is not None and self.lookasides.has_user_truth(value):
            return self.lookasides.truth(value)  # a user __bool__ or __len__, interpreted
        result = bool(value)
        source = self.source_of(value)
        if (
            source is not None
            and self.is_outside(value)
            and type(value) not in SCALAR_TYPES
            and not isinstance(value, (torch.Tensor, nn.Module))
        ):
            if not self.after_writes.size_guarded_before(
                value
            ) and not self.after_writes.guard_after_mutation(value):
                self.builder.expr(source, "bool({v})", result)
        return result

    def get_iter(self, obj: object) -> Any:
        source = self.source_of(obj)
        if source is None or not self.is_outside(obj) or isinstance(obj, torch.Tensor):
            return iter(obj)
        if (
            self.after_writes.appended_prefix(obj) is not None
        ):  # changed only by appends: its length before is guarded
            return self.after_writes.iter_outside_list(obj, source)
        if self.after_writes.guard_after_mutation(obj):
            return iter(obj)
        t = type(obj)
        base = container_base(t)
        if base is tuple:
            self.builder.length(source, len(obj))
            return iter([self.track(v, ItemSource(source, i)) for i, v in enumerate(obj)])
        if base is list:
            self.builder.length(source, len(obj))
            return self.after_writes.iter_outside_list(obj, source)
        modules = self.module_containers.iter_module_container(obj, source)  # torch's own __iter__, modelled
        if modules is not None:
            return modules
        if base is dict:
            self.deep_track(obj)
            return iter(obj)
        if t in SCALAR_TYPES or t is range:
            return iter(obj)
        if is_iterator(obj):
            stepped_outside_iterator(self, obj, "a for loop")
        self.deep_track(obj)
        return iter(obj)

    # ------------------------------------------------------------ native calls (native_calls.py)
    def call_native(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        return self.native_calls.call_native(fn, args, kwargs)

    def yielded(self, value: object, generator: object = None) -> None:
        self.native_calls.yielded(value, generator)

    def hashed(self, value: object) -> Any:
        return self.native_calls.hashed(value)

    def read_natively(self, value: object) -> None:
        self.native_calls.read_natively(value)  # the lookasides hand values to native code too

    def hand_to_torch(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """Call torch with data-dependent values (see NativeCalls.hand_to_torch)."""
        return self.native_calls.hand_to_torch(fn, args, kwargs)  # the write hooks' `t[k] = v` too

    def run_native(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """Run native code, its reads of tensor data made speculations (see NativeCalls.run_native)."""
        return self.native_calls.run_native(fn, args, kwargs)  # the container methods' calls too

    # ------------------------------------------------------------ lazy texts (lazy_texts.py)
    def lazy_format(self, value: object, spec: str, conversion: int) -> str | None:
        return self.texts.lazy_format(value, spec, conversion)

    def build_string(self, parts: list[str]) -> str:
        return self.texts.build_string(parts)

    def settle_texts(self, fn: object, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
        return self.texts.settle_texts(fn, args, kwargs)

    # ------------------------------------------------------------ profiling net
    def profile(self, frame: types.FrameType, event: str, arg: object) -> None:
        """sys.setprofile hook: user code running natively cannot be guarded."""
        if event == "call" and is_user_code(frame.f_code) and not class_read_by_jitlab(frame):
            self.problem(
                f"user code {frame.f_code.co_qualname} ran natively (called by library code)",
                ReasonKind.LIBRARY_CALLBACK,
            )
