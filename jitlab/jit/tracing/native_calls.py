"""The tracer's handling of native calls: C functions and library code called by interpreted code.

A native call cannot be watched from inside, so what it may read is guarded before the call (outside
containers and objects handed to it as a whole are guarded deeply) and what it changed is checked
after it (a changed outside container makes the capture uncacheable). Some calls are understood
exactly instead: `len`, `getattr`, `hasattr`, `setattr`, `print` (builtin_calls.py), methods of
outside lists, dicts and sets (replayed as effects, container_methods.py), draws from Python's
`random`, and arithmetic on data-dependent numbers that stays in the graph with the eager backend.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import math
import operator
import os
import random
import types
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import torch
import torch.nn as nn

from jitlab.jit.effects.pending import SideEffects
from jitlab.jit.effects.recipes import Recipe, recipe_for, validates_only
from jitlab.jit.graph.autocast_nodes import autocast_switch, record_switch
from jitlab.jit.graph.data_values import DataInt
from jitlab.jit.graph.number_types import reads_type
from jitlab.jit.graph.plain import plain_key
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.kinds import (
    CONTAINERS,
    container_base,
    has_slots,
    module_root,
    plain_object,
)
from jitlab.jit.guards.sources import ConstSource, Source
from jitlab.jit.interpreter import Interpreter
from jitlab.jit.reasons import ReasonKind, training_problem
from jitlab.jit.tracing.builtin_calls import NOT_SPECIAL, BuiltinCalls
from jitlab.jit.tracing.call_objects import CallObjects
from jitlab.jit.tracing.container_methods import ContainerMethods, container_method_of
from jitlab.jit.tracing.environment import environment_key, guard_template
from jitlab.jit.tracing.grad_mode import grad_mode_switch
from jitlab.jit.tracing.lookasides import Lookasides
from jitlab.jit.tracing.native_reach import (
    guarded_state_read,
    owner_through_method,
    owners_of_methods,
    reached_through_made,
    referent,
    refuse_stepped_iterators,
)
from jitlab.jit.tracing.native_reads import (
    GENERATORS,
    READS_NO_NUMBER,
    lazy_values_reached,
    passes_lazy_values,
    plain_args,
    reads_values,
    value_blind,
)
from jitlab.jit.tracing.outside_arrays import is_outside_array
from jitlab.jit.tracing.owned_results import owned_results, read_by_construction
from jitlab.jit.tracing.sequence_moves import moves_numbers_unread, numbers_read, reader_name
from jitlab.jit.tracing.subclass_lookups import NOT_LOOKUP
from jitlab.jit.tracing.subclass_lookups import lookup as subclass_lookup
from jitlab.jit.tracing.torch_state import (
    changes_torch_state,
    generator_problem,
    reads_torch_state,
    training_step_part,
)

_STATEFUL_MODULE_ROOTS = {
    "random", "time", "os", "sys", "io", "logging", "socket", "subprocess", "threading", "datetime",
    "uuid", "secrets", "tempfile", "shutil", "pathlib", "gc", "signal", "pickle", "posix", "nt",
}  # fmt: skip


class NativeRecorder(Protocol):
    """What the native calls use of the graph recorder (the break recorder of jitlab.jit.tracing,
    whose `reading` comes from graph/shapes.py's `SymbolicSizes`): the data-dependent numbers kept in
    the graph, and whether native code is reading them now. tests/jit/test_jit_owned_state.py checks
    that the real recorder has every member."""

    lazy: bool
    lazy_floats: dict[int, tuple[Any, ...]]
    type_unstable: set[int]
    consumed: list[int]
    native_depth: int
    raising_check: str | None

    def lazy_value(self, value: object) -> bool: ...

    def lazy_entry(self, value: object) -> tuple[Any, ...] | None: ...

    def lazy_entries_in(self, value: object, depth: int = 0) -> list[tuple[Any, ...]]: ...

    def use(self, value: object) -> None: ...

    def use_all(self) -> None: ...

    def activate(self, lazy: tuple) -> None: ...

    def read_type(self, value: object) -> None: ...

    def reading(self, reason: str) -> contextlib.AbstractContextManager[None]: ...

    def bookkeeping(
        self, name: str, fallback: object, record: Callable[..., object], *args: object
    ) -> object: ...

    def lazy_arithmetic(self, fn: Callable[..., Any], args: tuple, result: object) -> Any: ...

    def lazy_sum(self, args: tuple) -> Any: ...

    def lazy_shape(self, tensor: object, name: str, args: tuple) -> Any: ...

    def add_draw(self, fn: Callable[..., Any], args: tuple, kwargs: dict, value: float) -> None: ...


class NativeTracer(Protocol):
    """What the native calls use of the tracer (its guard builder changes at each graph break, so it
    is read at each guard); tests/jit/test_jit_owned_state.py checks the real one."""

    builder: GuardBuilder
    builtin_calls: BuiltinCalls
    call_objects: CallObjects
    container_methods: ContainerMethods
    lookasides: Lookasides
    recipes: dict[int, Recipe]
    side_effects: SideEffects

    @property
    def interpreter(self) -> Interpreter | None: ...

    @property
    def recorder(self) -> NativeRecorder: ...

    def deep_track(self, value: object, depth: int = 0) -> None: ...

    def fresh(self, obj: object) -> Any: ...

    def problem(self, message: str, kind: ReasonKind) -> None: ...

    def source_of(self, value: object) -> Source | None: ...

    def track(self, value: object, source: Source) -> Any: ...

    def is_outside(self, obj: object) -> bool: ...


class NativeCalls:
    """Owned by the tracer (`tracer.native_calls`): the `call_native` hook and what it needs, and the
    generators native code was handed (`yielded`)."""

    def __init__(self, tracer: NativeTracer) -> None:
        self.tracer = tracer
        self.fed_to_native: dict[int, object] = {}  # generators native code was handed (see yielded)

    def call_native(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        if self.tracer.call_objects.objects:
            self.tracer.call_objects.identity_read_by_native(fn, args, kwargs)  # call_objects.py
        replacement = self.tracer.lookasides.find(fn, args, kwargs)
        if replacement is not None:
            return replacement()  # a builtin that calls user code back, run with that code interpreted
        recorder = self.tracer.recorder
        if recorder.type_unstable and reads_type(fn) and args:
            recorder.read_type(args[0])  # `isinstance(max(1, f), int)`: see graph/number_types.py
        lazy = self._lazy_int_call(fn, args, kwargs)  # a compiling backend's ints too (compiled_ints.py)
        if lazy is not None:
            return lazy
        if recorder.lazy:
            for value in args:  # `map(str, gen)` before any number is read from data: see yielded
                if type(value) in GENERATORS and reads_values(fn, args):
                    self.fed_to_native[id(value)] = value
        if recorder.lazy_floats and not moves_numbers_unread(fn, args):
            if not passes_lazy_values(fn, args):
                if id(fn) in _LAZY_ARITHMETIC_IDS and not kwargs and any(map(recorder.lazy_value, args)):
                    real, arithmetic = fn(*args), _OUT_OF_PLACE.get(fn, fn)
                    result = recorder.bookkeeping(
                        reader_name(fn), real, recorder.lazy_arithmetic, arithmetic, args, real
                    )
                    if result is not None:
                        return result
                if fn is builtins.sum and not kwargs and recorder.lazy_entries_in(args):
                    self._read_whole(args)  # `sum(OUTSIDE)`: its items from before the call are guarded
                    result = recorder.bookkeeping("sum", None, recorder.lazy_sum, args)
                    if result is not None:
                        return result
                if id(fn) not in READS_NO_NUMBER:
                    # what native code reaches from its arguments and from the callable itself (the
                    # list of `scores.__getitem__`, the lists under an iterator, a closure): read
                    with recorder.reading(f"handed to {reader_name(fn)}"):
                        self.read_natively(numbers_read(fn, args, kwargs))
                    args = plain_args(fn, args)
            elif not value_blind(fn) and recorder.lazy_entries_in((args, kwargs)):
                with recorder.reading(f"read natively by {reader_name(fn)}"):
                    return self.hand_to_torch(fn, args, kwargs)
        return self._call_native(fn, args, kwargs)

    def _read_whole(self, values: tuple) -> list[Any]:
        """The outside containers, modules, plain objects and buffers (numpy arrays, deques, ...)
        among `values`, which native code reads as a whole: each is guarded whole (or the capture is
        not cached, see `deep_track`)."""
        read = []
        for value in values:
            if value is None or isinstance(value, torch.Tensor) or not self.tracer.is_outside(value):
                continue
            if self.tracer.source_of(value) is None:
                continue  # made by native code during the call, or unknown: not reachable by guards
            if (
                isinstance(value, (*CONTAINERS, set, frozenset))  # subclasses too (a defaultdict, Counter)
                or isinstance(value, nn.Module)
                or plain_object(value)
                or has_slots(value)  # an object with slots and no instance dict: they are read too
                or is_outside_array(value)  # its content is guarded (outside_arrays.py)
            ):
                self.tracer.deep_track(value)
                read.append(value)
        return read

    def _lazy_int_call(self, fn: object, args: tuple, kwargs: dict) -> Any:
        """`int(t)`, `int(k)`, `type(k)`, and (with the eager backend) sizes of data-dependent shapes
        read through tensor methods; None for any other call."""
        if kwargs or len(args) > 1:
            return None
        if fn is int and len(args) == 1:
            value = args[0]
            if type(value) is DataInt and self.tracer.recorder.lazy_value(value):
                return value  # int() of a data-dependent int is the same int
            if isinstance(value, torch.Tensor) and hasattr(type(value), "__int__"):
                # through __int__ directly: int() itself would turn a DataInt into a plain int
                return type(value).__int__(value)
            return None
        if fn is type and len(args) == 1 and type(args[0]) is DataInt:
            return int  # what eager code sees
        owner = getattr(fn, "__self__", None) if self.tracer.recorder.lazy else None
        if isinstance(owner, torch.Tensor) and type(fn) is types.BuiltinMethodType:
            name = getattr(fn, "__name__", "")
            if name in ("size", "numel"):
                return self.tracer.recorder.lazy_shape(owner, name, args)
        return None

    def read_natively(self, value: object) -> None:
        """Native code is handed `value`: every data-dependent number it can reach from it is read,
        so each becomes a speculation (all of them when the walk gives up, see native_reads.py)."""
        recorder = self.tracer.recorder
        if not recorder.lazy_floats:
            return
        found, complete = lazy_values_reached(recorder, (value,), self.fed_to_native)
        if not complete:
            recorder.use_all()
            return
        for entry in found:
            recorder.activate(entry)

    def yielded(self, value: object, generator: object = None) -> None:
        """A generator run by the interpreter (or a lookaside's) hands `value` to whoever resumed it:
        native code that reads values if one is running (`max(gen)`, `any(gen)`, `set(gen)`), or
        native code it was handed earlier (`map(str, gen)`, `itertools.accumulate(gen)`, advanced
        later by a `for` loop or `list`)."""
        if self.tracer.recorder.native_depth or (
            generator is not None and id(generator) in self.fed_to_native
        ):
            self.read_natively(value)

    def native_getitem(self, container: object, key: object) -> Any:
        """`container[key]` of a Python container: a tensor key is read by it (`Tensor.__index__`). A
        missing key of a `defaultdict` made in the call gets its value as `__missing__` makes it, its
        factory interpreted, so what the factory makes belongs to the call too (torch.optim's
        `defaultdict(lambda: defaultdict(list))` of gradients to zero)."""
        if self.inserts_default(container) and key not in container and not self.tracer.is_outside(container):
            value = container[key] = self.tracer.interpreter.call(container.default_factory, (), {})
            return value
        if not isinstance(key, torch.Tensor) or not self.tracer.recorder.lazy:
            return container[key]
        self.tracer.recorder.native_depth += 1
        try:
            return container[key]
        finally:
            self.tracer.recorder.native_depth -= 1

    def inserts_default(self, container: object) -> bool:
        """Whether a missing key of `container`, a plain `defaultdict`, gets its value as `__missing__`
        makes it, the factory interpreted (native_getitem)."""
        return (
            type(container) is collections.defaultdict
            and container.default_factory is not None
            and self.tracer.interpreter is not None
        )

    def hashed(self, value: object) -> Any:
        """A set item or dict key of interpreted code: hashing reads the value, and a DataInt stored
        there is a plain int from then on (what eager code stores, see graph/plain.py)."""
        self.tracer.call_objects.identity_read(
            value
        )  # an object hashed: guarded by identity (call_objects.py)
        recorder = self.tracer.recorder
        if recorder is None or not recorder.lazy_floats:
            return value
        recorder.use(value)
        return plain_key(value)

    def run_native(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """`fn(*args, **kwargs)`. While native code that reads values runs, the numbers read from
        tensor data by code it calls back (a generator it drives, `Tensor.__index__` called by
        `range(t)`) are read by it: recorder.native_depth makes them speculations at once."""
        if not self.tracer.recorder.lazy or not reads_values(fn, args):
            return fn(*args, **kwargs)
        self.tracer.recorder.native_depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            self.tracer.recorder.native_depth -= 1

    def _run_validating(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """`fn(*args, **kwargs)`; the decisions on tensor data a torch distribution's constructor
        makes only decide whether it raises (its validation of the parameters): they are checks,
        not specialisations (recorder.raising_check)."""
        if not validates_only(fn):
            return self.run_native(fn, args, kwargs)
        recorder = self.tracer.recorder
        outer = recorder.raising_check
        recorder.raising_check = outer or f"validated by {fn.__name__}(), which raises otherwise"
        try:
            return self.run_native(fn, args, kwargs)
        finally:
            recorder.raising_check = outer

    def hand_to_torch(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """Call torch with data-dependent values: each must have become a graph input of a recorded
        operation; one that did not (read natively by torch) is specialised on."""
        recorder = self.tracer.recorder
        handed = recorder.lazy_entries_in((args, kwargs))
        mark = len(recorder.consumed)
        try:
            return self._call_native(fn, args, kwargs)
        finally:
            consumed = set(recorder.consumed[mark:])
            for entry in handed:
                if id(entry[0]) not in consumed:
                    recorder.activate(entry)

    def _call_native(self, fn: object, args: tuple, kwargs: dict) -> Any:
        read = environment_key(fn, args, kwargs)
        if read is not None:
            name, default, how = read
            value = self.read_environment(name)
            if how == "contains":
                return value is not None
            return default if value is None else value
        if isinstance(fn, weakref.ref) and not args and not kwargs:
            return referent(self.tracer, fn)
        switch = autocast_switch(fn, args)
        if switch is not None:  # entering or leaving a region: graph/autocast_nodes.py
            return record_switch(self.tracer.recorder, switch, fn, args)
        owner = getattr(fn, "__self__", None)
        if owner is not None:
            owner_through_method(self.tracer, fn, owner)
            found = subclass_lookup(self.tracer, fn, args, kwargs)  # `super().get(key)`
            if found is not NOT_LOOKUP:
                return found
        special = self.tracer.builtin_calls.special_call(fn, args, kwargs)
        if special is not NOT_SPECIAL:
            return special
        if owner is not None and container_method_of(fn, owner):
            return self.tracer.container_methods.container_method(fn, owner, args, kwargs)
        root = module_root(fn)
        if not root and isinstance(owner, type):  # a C class's own method: `datetime.datetime.now`
            root = module_root(owner)
        if (
            isinstance(owner, random.Random)
            or any(isinstance(a, random.Random) for a in args)
            or _numpy_generator(owner)
        ):
            return self._random_draw(fn, args, kwargs)
        generator = generator_problem(fn, owner)
        if generator is not None:
            self.tracer.problem(generator, ReasonKind.UNSUPPORTED_CODE)
        if root in _STATEFUL_MODULE_ROOTS or (
            root == "numpy" and ".random" in (getattr(fn, "__module__", "") or "")
        ):
            self.tracer.problem(
                f"call to {getattr(fn, '__qualname__', fn)!s} from module {root} (state outside the graph)",
                ReasonKind.GLOBAL_STATE,
            )
        if root == "torch" and changes_torch_state(fn) and not grad_mode_switch(fn, args, kwargs):
            self.tracer.problem(
                f"{getattr(fn, '__qualname__', fn)} changes torch's global state", ReasonKind.GLOBAL_STATE
            )
        if reads_torch_state(fn, args, kwargs):
            return guarded_state_read(self.tracer.builder, fn)
        training = training_step_part(fn, args)
        if training is not None:
            self.tracer.problem(*training_problem(training))
        reads = read_by_construction(fn, args, kwargs)
        if reads is None:
            reads = (*args, *kwargs.values(), owner)
            reached = reached_through_made(self.tracer, fn, args, kwargs, owner)
            reads = (*reads, *reached, *owners_of_methods(self.tracer, reads))
        refuse_stepped_iterators(self.tracer, fn, reads)
        watched = [(value, _snapshot(value)) for value in self._read_whole(reads)]
        result = self._run_validating(fn, args, kwargs)
        for value, before in watched:
            if _snapshot(value) != before:
                self.tracer.problem(
                    f"native call {getattr(fn, '__qualname__', fn)} changed an outside {type(value).__name__}",
                    ReasonKind.SIDE_EFFECT,
                )
                self.tracer.side_effects.note_place(
                    "owner", value, None
                )  # what it stored there must leave as eager's
        for owned in owned_results(fn, args, result):
            self.tracer.fresh(owned)
        recipe = recipe_for(fn, args, kwargs, result)
        if recipe is not None:
            self.tracer.recipes[id(result)] = recipe
        return result

    def read_environment(self, name: str) -> str | None:
        """The value of environment variable `name` (None when unset), guarded (environment.py)."""
        value = os.environ.get(name)
        source = ConstSource(self.tracer.builder.const(os.environ, "environ"), "os.environ")
        self.tracer.builder.expr(source, guard_template(name), value)
        return value

    def _random_draw(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """A draw from Python's random or NumPy's generators: with the eager backend, a float drawn and
        only handed to torch (or never read) becomes a graph node, so every call draws afresh, in
        program order; otherwise not cacheable."""
        name = getattr(fn, "__name__", "")
        numpy = _numpy_generator(getattr(fn, "__self__", None))
        plain = all(
            isinstance(a, random.Random) or type(a) in (int, float) for a in (*args, *kwargs.values())
        )
        result = fn(*args, **kwargs)
        recorder = self.tracer.recorder
        if (
            recorder.lazy
            and not recorder.native_depth
            and type(result) is float
            and (numpy or name in _FLOAT_DRAWS)
            and plain
        ):
            self.tracer.recorder.add_draw(fn, args, kwargs, result)
        elif numpy:
            self.tracer.problem(
                f"call to {type(fn.__self__).__name__}.{name} from module numpy (state outside the graph)",
                ReasonKind.GLOBAL_STATE,
            )
        else:
            self.tracer.problem(
                f"draw from Python's random module ({name}) read by Python code", ReasonKind.DATA_DEPENDENT
            )
        return result


_LAZY_ARITHMETIC = {
    operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.neg,
    operator.pos, operator.abs, operator.iadd, operator.isub, operator.imul, operator.itruediv,
    operator.ipow, math.sqrt, math.exp, math.log, math.sin, math.cos, math.tanh,
    operator.floordiv, operator.mod, operator.ifloordiv, operator.imod, builtins.min, builtins.max,
    builtins.abs, int, float, round, math.floor, math.ceil,
}  # fmt: skip
_LAZY_ARITHMETIC_IDS = frozenset(map(id, _LAZY_ARITHMETIC))  # by identity: a callable may be unhashable
# numbers are immutable: `total += v` is `total = total + v` (and fx cannot render `0.0 += v`)
_OUT_OF_PLACE = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ipow: operator.pow, operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod,
}  # fmt: skip


def _numpy_generator(owner: object) -> bool:
    """Whether `owner` is a NumPy random generator (the global `np.random` one, or a Generator)."""
    t = type(owner)
    return t.__name__ in ("RandomState", "Generator") and t.__module__.startswith("numpy.random")


_FLOAT_DRAWS = {
    "random", "uniform", "gauss", "normalvariate", "lognormvariate", "expovariate", "betavariate",
    "gammavariate", "triangular", "vonmisesvariate", "paretovariate", "weibullvariate",
}  # fmt: skip


def _snapshot(value: object) -> Any:
    """What a native call could change in `value`, compared by identity of the items."""
    t = container_base(type(value)) or type(value)
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
