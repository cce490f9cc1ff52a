"""Objects the caller makes for each call, guarded by what the capture read of them, not by identity.

A plain object reached from the call's arguments (transformers' `DynamicCache` that `generate` makes
and passes as `past_key_values`, its `layers[i]`, an `EncoderDecoderCache`, an output object passed
back in) is usually a new object on every call. Guarded by identity (ID_MATCH), every call would
miss and be captured again. Such an object is guarded like a structured input instead, as
TorchDynamo guards user-defined objects: its exact type (TYPE_MATCH), and everything the program read
of it, each with its own guard as the read happens (attributes by value, lists by length and items,
tensors by dtype and sizes, with symbolic sizes after a miss). Writes to it are replayed on the
object the later call passes, named by its source, like writes to any outside object.

Identity still matters in three ways, each guarded:

- the same object reached through two sources (`kwargs['a']` and `kwargs['b'].parent`): a guard
  that the later call's two are the same object too (`is`);
- distinct objects: a later call passing one object twice (or an object the entry guards by
  identity) would see its own writes where the capture saw none, so the entry guards that the
  objects guarded this way are distinct, and distinct from the objects of their type it guards by
  identity;
- the program reading an object's identity (`id(obj)`, hashing it as a dict key or set item, `==`
  without an `__eq__` of its class, or handing it to native code, which may do any of those): that
  object is then guarded by identity after all (`identity_read`), as before. Native calls known to
  only store or move it are not such reads: type tests, attribute access, the built-in containers'
  methods called on it or storing it (`append`, `d[k] = obj`, `dict.update`, `key in kwargs`), and
  the value holders whose construction stores their arguments (transformers' `ModelOutput`).

`is` between objects needs no hook: the guards above fix which outside objects are the same.
"""

from __future__ import annotations

import builtins
import operator
import types
from typing import Any, Protocol

import torch
import torch.nn as nn

from jitlab.jit.graph.argument_generators import GeneratorSlot
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.kinds import plain_object
from jitlab.jit.guards.sources import ArgsSource, KwargsSource, Source
from jitlab.jit.tracing.owned_results import is_value_holder_class

#: native callables that never read an object's identity when handed one: type tests, attribute
#: access, and the list methods that store it (the replay stores the later call's object)
_IDENTITY_BLIND = frozenset(
    map(
        id,
        (
            isinstance, issubclass, type, getattr, hasattr, setattr, delattr, len, callable,
            torch.is_tensor, list.append, list.extend, list.insert, tuple, list, iter, next,
            builtins.super, vars,
        ),
    )
)  # fmt: skip


def _from_arguments(source: Source) -> bool:
    """Whether the source starts at the call's arguments (args or kwargs)."""
    while source.parent is not None:
        source = source.parent
    return isinstance(source, (ArgsSource, KwargsSource))


def per_call_kind(value: object) -> bool:
    """An instance of an ordinary class that holds its state in its `__dict__` (not a module,
    function, class, tensor, enum member, or an object of a C type), or a `torch.Generator`, whose
    draws the graph takes from the call's own (graph/argument_generators.py)."""
    if type(value) is torch.Generator:
        return True
    if isinstance(value, (nn.Module, torch.Tensor, types.SimpleNamespace)) or not plain_object(value):
        return False
    t = type(value)
    return bool(t.__flags__ & _HEAP_TYPE) and "__slots__" not in t.__dict__


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: made by a class statement, not a C type


class CallObjectTracer(Protocol):
    """What the objects of the call's arguments use of the tracer (its guard builder changes at each
    graph break, so it is read at each guard); tests/jit/test_jit_owned_state.py checks the real one."""

    builder: GuardBuilder

    def source_of(self, value: object) -> Source | None: ...


class CallObjects:
    """Owned by the tracer (`tracer.call_objects`): objects of the call's arguments guarded by their
    structure, and the builder of the segment that guarded each."""

    def __init__(self, tracer: CallObjectTracer) -> None:
        self.tracer = tracer
        # id -> (object, source, builder) of the objects guarded by structure, in the order met
        self.objects: dict[int, tuple[Any, Source, Any]] = {}
        # generators among them: native torch calls handed one as `generator=`, the draws recorded
        # through its slot, and the slot (see generator_slot)
        self.handed: dict[int, int] = {}
        self.drawn: dict[int, int] = {}
        self.slots: dict[int, GeneratorSlot] = {}

    def per_call_object(self, value: object, source: Source) -> bool:
        """Guard `value`, read from `source`, by its structure if it is an object of the call's
        arguments (a TYPE_MATCH now, its reads as they happen); False when it is guarded otherwise."""
        builder = self.tracer.builder
        known = self.objects.get(id(value))
        if known is not None:
            if known[1] != source:  # the same object reached another way: the later call's too
                builder.expr(source, "{v} is " + builder.var(known[1]), True)
            return True
        if not _from_arguments(source) or not per_call_kind(value):
            return False
        first = self.tracer.source_of(value)
        if first is not None and first != source:
            return False  # met first through a source guarded by identity: stays so
        builder.type_match(source, value)
        if type(value) is torch.Generator:
            builder.expr(source, "{v}.device", value.device)
        self.objects[id(value)] = (value, source, builder)
        return True

    def generator_slot(self, generator: torch.Generator) -> GeneratorSlot | None:
        """The slot a recorded operation draws from `generator` through, or None when the graph must
        keep the object itself: it is no generator of the arguments guarded by structure, or it was
        guarded in an earlier block than the graph that draws (after a graph break, the program may
        have run code between the guard that put it and this graph). The guards of its block put
        the call's generator in the slot."""
        known = self.objects.get(id(generator))
        if known is None or known[0] is not generator or known[2] is not self.tracer.builder:
            return None
        slot = self.slots.get(id(generator))
        if slot is None:
            slot = self.slots[id(generator)] = GeneratorSlot()
        builder = known[2]
        builder.check(
            known[1], f"{builder.const(slot, 'S')}.put({{v}})", "the graph draws from {v} (put in its slot)"
        )
        slot.put(generator)  # for the run on fake tensors, which follows the capture in this thread
        self.drawn[id(generator)] = self.drawn.get(id(generator), 0) + 1
        return slot

    def identity_read(self, value: object) -> None:
        """The program reads the identity of `value` (hashes it, compares it by default `==`, takes
        its `id`): if it is guarded by structure, guard it by identity too."""
        known = self.objects.get(id(value)) if self.objects else None
        if known is not None and known[0] is value:
            known[2].id_match(known[1], value)

    def identity_read_by_native(self, fn: object, args: tuple, kwargs: dict) -> None:
        """Native code handed objects guarded by structure (directly or in a list, tuple or dict)
        may read their identity, unless it is one of the calls known not to."""
        if id(fn) in _IDENTITY_BLIND or is_value_holder_class(fn):
            return
        owner = getattr(fn, "__self__", None)
        if type(owner) is torch.Generator:  # `g.initial_seed()`, `g.get_state()`: the object itself
            self.identity_read(owner)
        if fn is operator.contains and len(args) == 2:  # `x in c`: compares x with c's items or keys
            self.identity_read(args[1])
            if type(args[0]) in (list, tuple):
                self._items_identity_read(args[0])
            return
        handed = kwargs.get("generator")
        if type(handed) is torch.Generator and _torch_callable(fn):
            # drawn from: counted, and its draw recorded through a slot (generator_slot); kept by
            # identity at the end unless every one was (guard_call_objects)
            self.handed[id(handed)] = self.handed.get(id(handed), 0) + 1
            kwargs = {k: v for k, v in kwargs.items() if k != "generator"}
        for value in (*_identity_arguments(fn, args), *kwargs.values()):
            self.identity_read(value)
            if any(fn is reader for reader in _ITEM_IDENTITY_READERS):
                self._items_identity_read(value)

    def _items_identity_read(self, value: object) -> None:
        """Native code that hashes or compares the items of `value` (`set(objs)`, `objs == other`)."""
        if type(value) in (list, tuple, set, frozenset):
            for item in list(value)[:64]:
                self.identity_read(item)
        elif type(value) is dict:
            for item in list(value)[:64]:
                self.identity_read(item)

    def guard_call_objects(self) -> None:
        """At the end of the capture: a generator that native torch calls were handed other than as
        draws recorded through its slot is guarded by identity; the objects guarded by structure are
        distinct objects, and none is an object of its type that the entry guards by identity (per
        guard block)."""
        for key, (value, _source, _builder) in list(self.objects.items()):
            if type(value) is torch.Generator and self.handed.get(key, 0) != self.drawn.get(key, 0):
                self.identity_read(value)
        by_builder: dict[int, tuple[Any, list[tuple[Any, Source]]]] = {}
        for value, source, builder in self.objects.values():
            by_builder.setdefault(id(builder), (builder, []))[1].append((value, source))
        for builder, objects in by_builder.values():
            if len(objects) > 1:
                names = ", ".join(builder.var(source) for _value, source in objects)
                builder.check(
                    objects[0][1],
                    f"len({{{{id(o) for o in ({names},)}}}}) == {len(objects)}",
                    f"the {len(objects)} objects guarded by their structure are distinct objects",
                )
            for value, source in objects:
                same_type = [
                    name
                    for name, obj in builder.constants.items()
                    if name.startswith("O") and type(obj) is type(value) and obj is not value
                ]
                for name in same_type:
                    builder.check(
                        source, f"{{v}} is not {name}", f"{{v}} is not <{type(value).__name__} {name}>"
                    )


def _torch_callable(fn: object) -> bool:
    """Whether native `fn` is one of torch's functions or a tensor's method (what draws from a
    `generator=` it is handed, and keeps nothing of it)."""
    module = getattr(fn, "__module__", None) or ""
    if module == "torch" or module.startswith("torch."):
        return True
    return isinstance(getattr(fn, "__self__", None), torch.Tensor) or (
        getattr(fn, "__objclass__", None) is torch._C.TensorBase
    )


_CONTAINER_TYPES = (dict, list, tuple, set, frozenset)
#: native callables that hash or compare the items of a container they are handed
_ITEM_IDENTITY_READERS = (set, frozenset, dict.fromkeys, hash, operator.eq, operator.ne, sorted, min, max)
#: methods of built-in containers whose arguments at these positions are values stored, not keys
_VALUE_POSITIONS = {"append": (0,), "extend": (0,), "insert": (1,), "__setitem__": (1,), "setdefault": (1,)}


def _identity_arguments(fn: object, args: tuple) -> tuple:
    """The arguments of native `fn` whose identity it may read: for a method of a built-in container
    (or of a subclass such as transformers' `ModelOutput`), not the container it is called on, which
    it reads items of, and not the values it stores (`append`, `d[k] = v`)."""
    t = type(fn)
    if t in (types.MethodDescriptorType, types.WrapperDescriptorType):
        owner = getattr(fn, "__objclass__", None)
        if owner in _CONTAINER_TYPES:
            skip = {0} | {1 + p for p in _VALUE_POSITIONS.get(fn.__name__, ())}
            return tuple(a for i, a in enumerate(args) if i not in skip)
    elif t is types.BuiltinMethodType and isinstance(getattr(fn, "__self__", None), _CONTAINER_TYPES):
        skip = set(_VALUE_POSITIONS.get(fn.__name__, ()))
        return tuple(a for i, a in enumerate(args) if i not in skip)
    return args
