"""The tracer: the interpreter's hooks during a capture.

It follows where every outside value came from (`source_of`), adds a guard for each read (via
`GuardBuilder`), registers outside tensors as graph inputs, records side effects for replay, and
notes every *problem* that makes the capture unusable for later calls (the capture's own call is
always a faithful execution, so a problem only means "do not cache").
"""

from __future__ import annotations

import builtins
import math
import operator
import random
import sys
import types
from typing import Any

import torch
import torch.nn as nn

from jitlab.jit.graph import DataInt
from jitlab.jit.guards import SCALAR_TYPES, VALUE_TYPES, GuardBuilder
from jitlab.jit.interpreter.hooks import Hooks, is_user_code
from jitlab.jit.replay import Effect
from jitlab.jit.sources import AttrSource, ConstSource, ItemSource, Source, is_literal_key

_CONTAINERS = (list, tuple, dict)
_MODULE_SEQUENCES = (nn.ModuleList, nn.Sequential)
_LIBRARY_MODULE_ROOTS = {
    "torch", "math", "operator", "functools", "itertools", "builtins", "numpy", "collections",
    "typing", "dataclasses", "enum", "abc", "copy", "numbers", "string", "types", "warnings",
}  # fmt: skip
_STATEFUL_MODULE_ROOTS = {
    "random", "time", "os", "sys", "io", "logging", "socket", "subprocess", "threading", "datetime",
    "uuid", "secrets", "tempfile", "shutil", "pathlib", "gc", "signal", "pickle",
}  # fmt: skip
_PURE_BUILTINS = {
    "abs", "all", "any", "ascii", "bin", "bool", "callable", "chr", "complex", "dict", "divmod",
    "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "int", "isinstance",
    "issubclass", "iter", "len", "list", "map", "max", "min", "next", "oct", "ord", "pow", "range",
    "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "type", "zip",
    "object", "super", "property", "staticmethod", "classmethod", "id",
}  # fmt: skip
_FRESH_CONSTRUCTORS = (list, dict, set, sorted)
_REPLAYABLE_METHODS = {
    list: {"append", "extend", "insert", "clear"},
    dict: {"update", "clear", "__setitem__"},
    set: {"add", "update", "discard", "clear"},
}
_READONLY_METHODS = {
    list: {"index", "count", "copy", "__len__", "__getitem__", "__contains__"},
    dict: {"get", "keys", "values", "items", "copy", "__len__", "__getitem__", "__contains__"},
    set: {"copy", "__len__", "__contains__", "issubset", "issuperset", "union", "intersection", "difference"},
    tuple: {"index", "count", "__len__", "__getitem__", "__contains__"},
}


def _module_root(obj: Any) -> str:
    name = getattr(obj, "__module__", None) or ""
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
    return name.split(".", 1)[0]


class Tracer(Hooks):
    """Hooks that record sources, guards, tensor inputs and effects."""

    def __init__(self, builder: GuardBuilder) -> None:
        self.builder = builder
        self.recorder: Any = None  # set by the capture (GraphRecorder)
        self._sources: dict[int, tuple[Any, Source]] = {}
        self._fresh: dict[int, Any] = {}
        self._mutated: set[int] = set()
        self._written: set[tuple[int, str]] = set()
        self._modules: list[tuple[nn.Module, Source]] = []
        self.effects: list[Effect] = []
        self.problems: list[str] = []
        self.notes: list[str] = []
        self._hooked_modules: set[int] = set()
        self._deep_done: set[int] = set()
        self.writes: list[tuple[str, Any, Any]] = []  # outside places written while lazy values exist
        self._known_content: set[int] = set()  # outside objects whose whole content is guarded (breaks)

    # ------------------------------------------------------------ bookkeeping
    def problem(self, reason: str) -> None:
        if reason not in self.problems:
            self.problems.append(reason)

    def source_of(self, value: Any) -> Source | None:
        entry = self._sources.get(id(value))
        return entry[1] if entry is not None else None

    def fresh(self, obj: Any) -> Any:
        self._fresh[id(obj)] = obj
        t = type(obj)
        if (t is dict or t is set) and self.recorder is not None and self.recorder._lazy_floats:
            self.recorder.use(list(obj))  # hashing reads the value of data-dependent keys
        return obj

    def is_fresh(self, obj: Any) -> bool:
        return id(obj) in self._fresh

    # ------------------------------------------------------------ graph breaks (see breaks.py)
    def adopt(self, obj: Any, source: Source) -> None:
        """An object made during the call is now reachable by code the capture cannot see (it was
        handed to a graph break): from now on it is an outside object read from `source`."""
        self._fresh.pop(id(obj), None)
        self._sources[id(obj)] = (obj, source)

    def know_content(self, obj: Any) -> None:
        """The whole content of an adopted object has just been guarded (`deep_track`): what the
        program changes in it afterwards is replayed, so reading it after such a change is exact."""
        self.deep_track(obj)
        self._known_content.add(id(obj))

    def new_segment(self, builder: GuardBuilder) -> None:
        """A graph break ran code the capture cannot see: later reads are guarded anew, by `builder`.
        Every per-segment memory of reads and writes must be forgotten here."""
        self.builder = builder
        self._mutated.clear()
        self._written.clear()
        self._deep_done.clear()
        self._hooked_modules.clear()

    def _outside(self, obj: Any) -> bool:
        return id(obj) not in self._fresh

    def _guard_after_mutation(self, obj: Any) -> bool:
        if id(obj) in self._mutated:
            if id(obj) not in self._known_content:
                self.problem(f"reads a {type(obj).__name__} after changing it in the same call")
            return True
        return False

    # ------------------------------------------------------------ tracking
    def track(self, value: Any, source: Source) -> Any:
        """Register `value` read from `source` and guard what matters about it."""
        try:
            return self._track(value, source)
        except Exception as exc:  # a bug here must cost the cache entry, never the user's call
            self.problem(f"internal error while guarding {source.describe()}: {type(exc).__name__}: {exc}")
            return value

    def _track(self, value: Any, source: Source) -> Any:
        t = type(value)
        if t in SCALAR_TYPES or isinstance(value, VALUE_TYPES):
            self.builder.equals_match(source, value)
            return value
        if isinstance(value, torch.Tensor):
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
        if t in _CONTAINERS:
            self.builder.type_match(source, value)
            return value
        self.builder.id_match(source, value)
        if isinstance(value, nn.Module):
            self._modules.append((value, source))
        return value

    def deep_track(self, value: Any, depth: int = 0) -> None:
        """An outside container is read as a whole by native code: guard all of its content."""
        try:
            self._deep_track(value, depth)
        except Exception as exc:
            self.problem(
                f"internal error while guarding a {type(value).__name__}: {type(exc).__name__}: {exc}"
            )

    def _deep_track(self, value: Any, depth: int) -> None:
        source = self.source_of(value)
        if source is None or not self._outside(value) or id(value) in self._deep_done:
            return
        if depth > 4:
            self.problem("a deeply nested outside value is read as a whole by native code")
            return
        if self._guard_after_mutation(value):
            return
        self._deep_done.add(id(value))
        t = type(value)
        if t in (set, frozenset):
            if all(type(v) in SCALAR_TYPES for v in value):
                self.builder.expr(source, "{v}", frozenset(value))
            else:
                self.problem("a set of non-scalar values is read as a whole by native code")
        elif t in (list, tuple):
            self.builder.length(source, len(value))
            for i, item in enumerate(value):
                self.track(item, ItemSource(source, i))
                self.deep_track(item, depth + 1)
        elif t is dict:
            if not all(is_literal_key(k) for k in value):
                self.problem("a dict with non-literal keys is read as a whole")
                return
            self.builder.expr(source, "list({v})", list(value))
            for key, item in value.items():
                self.track(item, ItemSource(source, key))
                self.deep_track(item, depth + 1)
        elif isinstance(value, nn.Module):
            self._deep_track_module(value, source, depth)
        elif _plain_object(value):
            for name, item in vars(value).items():
                self.track(item, AttrSource(source, name))
                self.deep_track(item, depth + 1)

    def _deep_track_module(self, module: nn.Module, source: Source, depth: int) -> None:
        for attr in ("_parameters", "_buffers", "_modules"):
            table = getattr(module, attr)
            sub = AttrSource(source, attr)
            self.builder.expr(sub, "list({v})", list(table))
            for key, item in table.items():
                self.track(item, ItemSource(sub, key))
                if attr == "_modules" and item is not None:
                    self._deep_track_module(item, ItemSource(sub, key), depth + 1)
        self.builder.equals_match(AttrSource(source, "training"), module.training)

    def resolve_tensor(self, tensor: torch.Tensor) -> Any:
        """A tensor reached the graph without being read through a source: find it or give up."""
        for module, source in list(self._modules):
            found = _find_in_module(module, source, tensor, 0)
            if found is not None:
                self.track(tensor, found)
                return self.recorder.node_of[id(tensor)][1]
        self.problem(f"a tensor of unknown origin (shape {tuple(tensor.shape)}) is used")
        return self.recorder.add_input(tensor, "unknown")

    # ------------------------------------------------------------ decisions
    def step_into(self, func: types.FunctionType) -> bool:
        code = func.__code__
        if is_user_code(code) or func.__name__ == "forward" or code.co_filename == "<string>":
            return True
        return (func.__module__ or "").startswith("torch.nn.modules")

    def defaults_used(self, func: types.FunctionType, bound: dict[str, Any]) -> None:
        if not self._outside(func):
            return
        code = func.__code__
        fsource = ConstSource(self.builder.const(func, "F"), func.__qualname__)
        defaults = func.__defaults__ or ()
        first = code.co_argcount - len(defaults)
        for i, value in enumerate(defaults):
            name = code.co_varnames[first + i]
            if bound.get(name) is value and type(value) not in SCALAR_TYPES:
                self.track(value, ItemSource(AttrSource(fsource, "__defaults__"), i))
        for name, value in (func.__kwdefaults__ or {}).items():
            if bound.get(name) is value and type(value) not in SCALAR_TYPES:
                self.track(value, ItemSource(AttrSource(fsource, "__kwdefaults__"), name))

    def native_user_code(self, func: types.FunctionType, reason: str) -> None:
        self.problem(f"user function ran natively: {reason}")

    def intercept_call(self, fn: Any, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
        from jitlab.jit.api import JitFunction

        if isinstance(fn, JitFunction):
            return fn._fn, args, kwargs  # a jitted callable inside the program: capture what it runs
        if not isinstance(fn, nn.Module):
            return None
        cls = type(fn)
        if cls.__call__ is not nn.Module.__call__:
            call = cls.__call__
            if type(call) is types.FunctionType:
                return call, (fn, *args), kwargs
            return None
        if fn._forward_hooks or fn._forward_pre_hooks or fn._backward_hooks or fn._backward_pre_hooks:
            self.problem(f"module {cls.__name__} has hooks")
            return None
        source = self.source_of(fn)
        if source is not None and id(fn) not in self._hooked_modules:
            self._hooked_modules.add(id(fn))
            self.builder.check(
                source,
                "not ({v}._forward_hooks or {v}._forward_pre_hooks or {v}._backward_hooks "
                "or {v}._backward_pre_hooks)",
                "no hooks on {v}",
            )
        forward = fn.__dict__.get("forward")
        if forward is not None:
            return forward, args, kwargs
        return cls.forward, (fn, *args), kwargs

    # ------------------------------------------------------------ reads
    def load_global(self, globals_: dict[str, Any], name: str) -> Any:
        value = super().load_global(globals_, name)
        if name not in globals_:
            return value  # a builtin
        if not _is_user_globals(globals_):
            return value  # library module namespaces are taken as constant
        label = f"{globals_.get('__name__', '?')}.globals"
        gsource = ConstSource(self.builder.const(globals_, "G"), label)
        return self.track(value, ItemSource(gsource, name))

    def load_attr(self, obj: Any, name: str) -> Any:
        if name == "shape" and isinstance(obj, torch.Tensor):
            lazy = self.recorder.lazy_shape(obj, "shape", ())
            if lazy is not None:
                return lazy
        if type(obj) is float or type(obj) is DataInt:
            self.recorder.use(obj)  # `k.real`, `f.is_integer`: Python reads the number
        value = getattr(obj, name)
        if isinstance(obj, torch.Tensor) or not self._outside(obj):
            return value
        source = self.source_of(obj)
        if source is None:
            return value
        if isinstance(obj, types.ModuleType) and _module_root(obj) in _LIBRARY_MODULE_ROOTS:
            return value
        if (id(obj), name) in self._written:
            return value
        if (
            isinstance(value, (types.MethodType, types.BuiltinMethodType))
            and getattr(value, "__self__", None) is obj
        ):
            return value
        if self._guard_after_mutation(obj):
            return value
        if isinstance(obj, nn.Module) and name not in obj.__dict__:
            for table in ("_parameters", "_buffers", "_modules"):
                if name in obj.__dict__[table]:
                    return self.track(value, ItemSource(AttrSource(source, table), name))
        return self.track(value, AttrSource(source, name))

    def load_item(self, container: Any, key: Any) -> Any:
        if isinstance(container, torch.Tensor):
            return self._hand_to_torch(container.__getitem__, (key,), {})
        self.recorder.use(key)
        value = container[key]
        if not self._outside(container):
            return value
        source = self.source_of(container)
        if source is None:
            return value
        if self._guard_after_mutation(container):
            return value
        t = type(container)
        if t in _CONTAINERS and is_literal_key(key):
            if type(key) is int and key < 0:
                self.builder.length(source, len(container))
            return self.track(value, ItemSource(source, key))
        if t in _MODULE_SEQUENCES and type(key) is int:
            keys = list(container._modules)
            self.builder.length(source, len(keys), "len({v}._modules)")
            return self.track(value, ItemSource(AttrSource(source, "_modules"), keys[key]))
        if t is nn.ModuleDict and type(key) is str:
            return self.track(value, ItemSource(AttrSource(source, "_modules"), key))
        self.deep_track(container)
        return value

    def load_cell(self, cell: types.CellType, owner_is_fresh: bool) -> Any:
        value = cell.cell_contents
        source = ConstSource(self.builder.const(cell, "CELL"), "closure cell")
        return self.track(value, AttrSource(source, "cell_contents"))

    def length(self, obj: Any) -> int:
        if isinstance(obj, torch.Tensor):
            lazy = self.recorder.lazy_shape(obj, "__len__", ())
            if lazy is not None:
                return lazy
        n = len(obj)
        source = self.source_of(obj)
        if source is not None and self._outside(obj) and not isinstance(obj, torch.Tensor):
            if not self._guard_after_mutation(obj):
                if isinstance(obj, (nn.ModuleList, nn.Sequential, nn.ModuleDict)):
                    self.builder.length(source, n, "len({v}._modules)")
                else:
                    self.builder.length(source, n)
        return n

    def truth(self, value: Any) -> bool:
        self.recorder.use(value)
        result = bool(value)
        source = self.source_of(value)
        if (
            source is not None
            and self._outside(value)
            and type(value) not in SCALAR_TYPES
            and not isinstance(value, (torch.Tensor, nn.Module))
        ):
            if not self._guard_after_mutation(value):
                self.builder.expr(source, "bool({v})", result)
        return result

    def get_iter(self, obj: Any) -> Any:
        source = self.source_of(obj)
        if source is None or not self._outside(obj) or isinstance(obj, torch.Tensor):
            return iter(obj)
        if self._guard_after_mutation(obj):
            return iter(obj)
        t = type(obj)
        if t in (list, tuple):
            self.builder.length(source, len(obj))
            return iter([self.track(v, ItemSource(source, i)) for i, v in enumerate(obj)])
        if t in _MODULE_SEQUENCES or t is nn.ModuleDict:
            keys = list(obj._modules)
            mods = AttrSource(source, "_modules")
            self.builder.expr(mods, "list({v})", keys)
            if t is nn.ModuleDict:
                return iter(keys)
            return iter([self.track(obj._modules[k], ItemSource(mods, k)) for k in keys])
        if t is dict:
            self.deep_track(obj)
            return iter(obj)
        if t in SCALAR_TYPES or t is range:
            return iter(obj)
        self.deep_track(obj)
        return iter(obj)

    # ------------------------------------------------------------ writes
    def _write_target(self, obj: Any, what: str) -> Source | None:
        """The source of an outside object about to be changed, or None if the object is fresh."""
        if not self._outside(obj):
            return None
        source = self.source_of(obj)
        if source is None:
            self.problem(f"{what} on a {type(obj).__name__} of unknown origin")
        return source

    def _note_write(self, kind: str, holder: Any, key: Any) -> None:
        if self.recorder._lazy_floats:
            self.writes.append((kind, holder, key))

    def store_attr(self, obj: Any, name: str, value: Any) -> None:
        self._note_write("attr", obj, name)
        if isinstance(obj, torch.Tensor):
            self.problem(f"attribute write .{name} on a tensor")
            setattr(obj, name, value)
            return
        source = self._write_target(obj, f"attribute write .{name}")
        setattr(obj, name, value)
        if source is not None:
            self.effects.append(Effect("attr", source, name, (value,)))
            self._written.add((id(obj), name))

    def delete_attr(self, obj: Any, name: str) -> None:
        source = self._write_target(obj, f"del .{name}")
        delattr(obj, name)
        if source is not None:
            self.effects.append(Effect("delattr", source, name))
            self._written.add((id(obj), name))

    def store_item(self, container: Any, key: Any, value: Any) -> None:
        if isinstance(container, torch.Tensor):
            self._hand_to_torch(container.__setitem__, (key, value), {})
            return
        self._note_write("item", container, key)
        self.recorder.use(key)
        source = self._write_target(container, "item write")
        container[key] = value
        if source is not None:
            if not is_literal_key(key) and not isinstance(key, torch.Tensor):
                self.problem("item write with a non-literal key on an outside container")
            self.effects.append(Effect("item", source, key, (value,)))
            self._mutated.add(id(container))

    def delete_item(self, container: Any, key: Any) -> None:
        source = self._write_target(container, "item deletion")
        del container[key]
        if source is not None:
            self.effects.append(Effect("delitem", source, key))
            self._mutated.add(id(container))

    def store_global(self, globals_: dict[str, Any], name: str, value: Any) -> None:
        self._note_write("item", globals_, name)
        globals_[name] = value
        self.effects.append(Effect("global", globals_, name, (value,)))

    def delete_global(self, globals_: dict[str, Any], name: str) -> None:
        self.problem(f"del of the global {name}")
        super().delete_global(globals_, name)

    def store_cell(self, cell: types.CellType, value: Any) -> None:
        from jitlab.jit.interpreter.ops_names import _EMPTY

        if value is _EMPTY:
            self.problem("del of a closure variable of an outside function")
            return
        self._note_write("attr", cell, "cell_contents")
        cell.cell_contents = value
        self.effects.append(Effect("cell", cell, None, (value,)))

    # ------------------------------------------------------------ native calls
    def call_native(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        recorder = self.recorder
        if recorder.lazy:
            lazy = self._lazy_int_call(fn, args, kwargs)
            if lazy is not None:
                return lazy
        if recorder._lazy_floats:
            if not _passes_lazy_values(fn, args):
                if fn in _LAZY_ARITHMETIC and not kwargs and any(map(recorder.lazy_value, args)):
                    result = recorder.lazy_arithmetic(_OUT_OF_PLACE.get(fn, fn), args, fn(*args))
                    if result is not None:
                        return result
                if fn is builtins.sum and not kwargs and recorder.lazy_entries_in(args):
                    result = recorder.lazy_sum(args)
                    if result is not None:
                        return result
                recorder.use(args)
                recorder.use(kwargs)
                recorder.use(getattr(fn, "__self__", None))  # `lst.sort()`, `lst.index(v)` read the items
            elif not _value_blind(fn) and recorder.lazy_entries_in((args, kwargs)):
                return self._hand_to_torch(fn, args, kwargs)
        return self._call_native(fn, args, kwargs)

    def _lazy_int_call(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """`int(t)`, `int(k)`, `type(k)`, and sizes of data-dependent shapes read through tensor
        methods, with the eager backend; None for any other call."""
        if kwargs or len(args) > 1:
            return None
        if fn is int and len(args) == 1:
            value = args[0]
            if type(value) is DataInt and self.recorder.lazy_value(value):
                return value  # int() of a data-dependent int is the same int
            if isinstance(value, torch.Tensor) and hasattr(type(value), "__int__"):
                # through __int__ directly: int() itself would turn a DataInt into a plain int
                return type(value).__int__(value)
            return None
        if fn is type and len(args) == 1 and type(args[0]) is DataInt:
            return int  # what eager code sees
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, torch.Tensor) and type(fn) is types.BuiltinMethodType:
            name = getattr(fn, "__name__", "")
            if name in ("size", "numel"):
                return self.recorder.lazy_shape(owner, name, args)
        return None

    def _hand_to_torch(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """Call torch with data-dependent values: each must have become a graph input of a recorded
        operation; one that did not (read natively by torch) is specialised on."""
        recorder = self.recorder
        handed = recorder.lazy_entries_in((args, kwargs))
        mark = len(recorder._consumed)
        try:
            return self._call_native(fn, args, kwargs)
        finally:
            consumed = set(recorder._consumed[mark:])
            for entry in handed:
                if id(entry[0]) not in consumed:
                    recorder._activate(entry)

    def _call_native(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        special = self._special_call(fn, args, kwargs)
        if special is not _NOT_SPECIAL:
            return special
        owner = getattr(fn, "__self__", None)
        if owner is not None and type(fn) is types.BuiltinMethodType and type(owner) in _READONLY_METHODS:
            return self._container_method(fn, owner, args, kwargs)
        root = _module_root(fn)
        if isinstance(owner, random.Random) or any(isinstance(a, random.Random) for a in args):
            return self._random_draw(fn, args, kwargs)
        if root in _STATEFUL_MODULE_ROOTS or (
            root == "numpy" and ".random" in (getattr(fn, "__module__", "") or "")
        ):
            self.problem(
                f"call to {getattr(fn, '__qualname__', fn)!s} from module {root} (state outside the graph)"
            )
        if root == "torch" and _changes_torch_state(fn):
            self.problem(f"{getattr(fn, '__qualname__', fn)} changes torch's global state")
        watched = []
        for value in (*args, *kwargs.values(), owner):
            if value is None or isinstance(value, torch.Tensor) or not self._outside(value):
                continue
            if self.source_of(value) is None:
                continue  # made by native code during the call, or unknown: not reachable by guards
            if type(value) in (*_CONTAINERS, set) or isinstance(value, nn.Module) or _plain_object(value):
                self.deep_track(value)  # native code reads it as a whole
                watched.append((value, _snapshot(value)))
        result = fn(*args, **kwargs)
        for value, before in watched:
            if _snapshot(value) != before:
                self.problem(
                    f"native call {getattr(fn, '__qualname__', fn)} changed an outside {type(value).__name__}"
                )
        if fn in _FRESH_CONSTRUCTORS:
            self.fresh(result)
        return result

    def _random_draw(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """A draw from Python's random: with the eager backend, a float drawn and only handed to torch
        becomes a graph node (so every call draws afresh, in program order); otherwise not cacheable."""
        name = getattr(fn, "__name__", "")
        plain = all(
            isinstance(a, random.Random) or type(a) in (int, float) for a in (*args, *kwargs.values())
        )
        result = fn(*args, **kwargs)
        if self.recorder.lazy and type(result) is float and name in _FLOAT_DRAWS and plain:
            self.recorder.add_draw(fn, args, kwargs, result)
        else:
            self.problem(f"draw from Python's random module ({name}) read by Python code")
        return result

    def _container_method(self, fn: Any, owner: Any, args: tuple, kwargs: dict) -> Any:
        name = fn.__name__
        t = type(owner)
        if not self._outside(owner):
            for value in (*args, *kwargs.values()):
                if type(value) in _CONTAINERS:
                    self.deep_track(value)
            result = fn(*args, **kwargs)
            if name == "copy":
                self.fresh(result)
            return result
        source = self.source_of(owner)
        if name in _READONLY_METHODS.get(t, ()):
            self.deep_track(owner)
            result = fn(*args, **kwargs)
            if name == "copy":
                self.fresh(result)
            return result
        if source is None:
            self.problem(f"{t.__name__}.{name} on a container of unknown origin")
        elif name not in _REPLAYABLE_METHODS.get(t, ()) or kwargs:
            self.problem(f"{t.__name__}.{name} on an outside container is not replayed")
        for value in args:
            if type(value) in _CONTAINERS:
                self.deep_track(value)
        result = fn(*args, **kwargs)
        self._note_write("owner", owner, None)
        if source is not None:
            self.effects.append(Effect("method", source, name, tuple(args)))
            self._mutated.add(id(owner))
        return result

    def _special_call(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        if type(fn) is not types.BuiltinFunctionType or getattr(fn, "__self__", None) is not builtins:
            if fn is operator.contains and args and self.source_of(args[0]) is not None:
                container, item = args
                if type(container) is dict and is_literal_key(item):
                    result = item in container
                    if self._outside(container) and not self._guard_after_mutation(container):
                        self.builder.expr(self.source_of(container), f"{item!r} in {{v}}", result)
                    return result
            return _NOT_SPECIAL
        name = fn.__name__
        if name == "len" and len(args) == 1 and not kwargs:
            return self.length(args[0])
        if name == "print":
            return self._print(args, kwargs)
        if name == "getattr" and len(args) in (2, 3) and type(args[1]) is str:
            try:
                return self.load_attr(args[0], args[1])
            except AttributeError:
                if len(args) == 3:
                    self._guard_missing_attr(args[0], args[1])
                    return args[2]
                raise
        if name == "hasattr" and len(args) == 2 and type(args[1]) is str:
            result = hasattr(args[0], args[1])
            source = self.source_of(args[0])
            if source is not None and self._outside(args[0]) and not isinstance(args[0], torch.Tensor):
                self.builder.expr(source, f"hasattr({{v}}, {args[1]!r})", result)
            return result
        if name == "setattr" and len(args) == 3 and type(args[1]) is str:
            self.store_attr(*args)
            return None
        if name == "isinstance" or name == "issubclass":
            return fn(*args, **kwargs)
        if name in (
            "vars",
            "globals",
            "locals",
            "input",
            "open",
            "exec",
            "eval",
            "compile",
            "breakpoint",
            "delattr",
        ):
            self.problem(f"builtin {name}() is not supported")
            return _NOT_SPECIAL
        if name not in _PURE_BUILTINS:
            return _NOT_SPECIAL
        return _NOT_SPECIAL

    def _guard_missing_attr(self, obj: Any, name: str) -> None:
        source = self.source_of(obj)
        if source is not None and self._outside(obj):
            self.builder.expr(source, f"hasattr({{v}}, {name!r})", False)

    def _print(self, args: tuple, kwargs: dict) -> None:
        if kwargs.get("file") is not None:
            self.problem("print(file=...) is not replayed")
        for value in args:
            if type(value) in _CONTAINERS:
                self.deep_track(value)
        with self.recorder.pause():
            print(*args, **kwargs)
        self.effects.append(Effect("print", None, None, tuple(args), dict(kwargs)))
        return None

    # ------------------------------------------------------------ profiling net
    def profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        """sys.setprofile hook: user code running natively cannot be guarded."""
        if event == "call" and is_user_code(frame.f_code):
            self.problem(f"user code {frame.f_code.co_qualname} ran natively (called by library code)")


_NOT_SPECIAL = object()
_LAZY_ARITHMETIC = {
    operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.neg,
    operator.pos, operator.abs, operator.iadd, operator.isub, operator.imul, operator.itruediv,
    operator.ipow, math.sqrt, math.exp, math.log, math.sin, math.cos, math.tanh,
    operator.floordiv, operator.mod, operator.ifloordiv, operator.imod, builtins.min, builtins.max,
    builtins.abs, int, float, round, math.floor, math.ceil,
}  # fmt: skip
# numbers are immutable: `total += v` is `total = total + v` (and fx cannot render `0.0 += v`)
_OUT_OF_PLACE = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ipow: operator.pow, operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod,
}  # fmt: skip
_FLOAT_DRAWS = {
    "random", "uniform", "gauss", "normalvariate", "lognormvariate", "expovariate", "betavariate",
    "gammavariate", "triangular", "vonmisesvariate", "paretovariate", "weibullvariate",
}  # fmt: skip
_TORCH_STATE_FUNCTIONS = {"manual_seed", "seed", "fork_rng", "use_deterministic_algorithms", "compile"}


def _changes_torch_state(fn: Any) -> bool:
    name = getattr(fn, "__name__", "") or ""
    return name.startswith("set_") or name in _TORCH_STATE_FUNCTIONS


def _plain_object(value: Any) -> bool:
    """An instance of an ordinary class (its attributes in __dict__), not a module, class or function."""
    if isinstance(
        value, (type, types.ModuleType, types.FunctionType, types.MethodType, nn.Module, torch.Tensor)
    ):
        return False
    return hasattr(value, "__dict__") and type(value).__module__ not in ("builtins",)


def _snapshot(value: Any) -> Any:
    """What a native call could change in `value`, compared by identity of the items."""
    t = type(value)
    if t in (list, tuple):
        return tuple(map(id, value))
    if t is dict:
        return tuple((k, id(v)) for k, v in value.items())
    if t in (set, frozenset):
        return frozenset(map(id, value))
    if isinstance(value, nn.Module):
        tables = (value.__dict__, value._parameters, value._buffers, value._modules)
        return tuple(tuple((k, id(v)) for k, v in table.items()) for table in tables)
    if hasattr(value, "__dict__"):
        return tuple((k, id(v)) for k, v in vars(value).items())
    return None


_VALUE_BLIND_BUILTINS = {"isinstance", "issubclass", "type", "id", "callable", "print", "len"}


def _value_blind(fn: Any) -> bool:
    """A builtin that never reads the value of a number it is given (`len`, `isinstance`, ...), or a
    list method that only stores it (`append`, `extend`: the replay writes the graph's value)."""
    if fn is list or fn is tuple or fn is enumerate or fn is zip or fn is reversed:
        return True  # they copy or pair items without reading them
    if type(fn) is not types.BuiltinFunctionType:
        return False
    owner = getattr(fn, "__self__", None)
    if owner is builtins:
        return fn.__name__ in _VALUE_BLIND_BUILTINS
    return type(owner) is list and fn.__name__ in ("append", "extend")


def _passes_lazy_values(fn: Any, args: tuple) -> bool:
    """Whether a call only hands data-dependent floats on to torch (which records them) unread."""
    if _value_blind(fn):
        return True
    if isinstance(fn, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)):
        name = getattr(fn, "__name__", "")
        if getattr(fn, "__self__", None) is builtins and name in _VALUE_BLIND_BUILTINS:
            return True
        owner = getattr(fn, "__objclass__", None) or getattr(fn, "__self__", None)
        module = getattr(fn, "__module__", None) or getattr(type(owner), "__module__", "") or ""
        if module.startswith("torch") or owner is torch._C.TensorBase or isinstance(owner, torch.Tensor):
            return True
    if getattr(fn, "__module__", None) in ("_operator", "operator"):
        return any(isinstance(a, torch.Tensor) for a in args)
    return False


def _is_user_globals(globals_: dict[str, Any]) -> bool:
    spec_file = globals_.get("__file__")
    if not spec_file:
        return True
    name = globals_.get("__name__", "")
    root = name.split(".", 1)[0]
    if root in _LIBRARY_MODULE_ROOTS or root in sys.stdlib_module_names:
        return False
    import os

    from jitlab.jit.interpreter.hooks import _library_prefixes

    return not os.path.realpath(spec_file).startswith(_library_prefixes())


def _find_in_module(module: nn.Module, source: Source, tensor: torch.Tensor, depth: int) -> Source | None:
    if depth > 8:
        return None
    for table in ("_parameters", "_buffers"):
        for key, value in getattr(module, table).items():
            if value is tensor:
                return ItemSource(AttrSource(source, table), key)
    for key, child in module._modules.items():
        if child is not None:
            found = _find_in_module(child, ItemSource(AttrSource(source, "_modules"), key), tensor, depth + 1)
            if found is not None:
                return found
    return None
