"""User code called back by library code, run by the interpreter instead of natively.

CPython's C functions call user Python in many places: `map(self.step, xs)`, `sorted(xs, key=...)`,
`functools.reduce`, `min`/`max` with `key=`, `list(obj)` of an object with a user `__iter__`,
`len(obj)`, `bool(obj)`, `x in obj`, `str(obj)`, a user `__getattr__` reached by attribute access,
a user `__setattr__`, calling an object with a user `__call__`, `torch.utils.checkpoint`. Run
natively, that code's reads of outside values would not be guarded, so the capture would not be
cacheable. Here each of those builtins has a *lookaside*: a Python version that calls the user
code through the interpreter (so its reads are guarded and its tensor operations recorded) and
does the rest exactly as the builtin does (same order of calls, same results, same errors).

A lookaside is only used when a callback or special method really is user code; plain cases
(`sorted(xs)`, `map(str, xs)`) stay native.

A lookaside is a `Lookasides` method registered for the library functions it replaces with the
`@lookaside(fn, ...)` decorator (or `register_lookaside`), the way opcode handlers are registered in
jitlab.jit.interpreter.registry; a second lookaside for the same function is an error at import.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import operator
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn as nn
import torch.utils.checkpoint

from jitlab.jit.graph.autograd_functions import FUNCTION_APPLY, capture_apply, is_function_apply
from jitlab.jit.graph.data_values import DataInt
from jitlab.jit.interpreter import Interpreter
from jitlab.jit.interpreter.sites import TRUTH, resumable
from jitlab.jit.tracing.dict_subclasses import dict_subclass_call
from jitlab.jit.tracing.jitted import Jitted
from jitlab.jit.tracing.lookaside_host import LookasideTracer
from jitlab.jit.tracing.script_functions import script_function_call
from jitlab.jit.tracing.training_calls import compiling_answer

NOT_HANDLED = object()
_SCRIPT_FUNCTION = torch.jit.ScriptFunction  # looked up once: `find` runs for every native call

# id(library function) -> (the function, its lookaside: impl(lookasides, args, kwargs) -> call or None)
_LOOKASIDES: dict[int, tuple[Any, Callable[..., Callable[[], Any] | None]]] = {}


def register_lookaside(target: object, impl: Callable[..., Callable[[], Any] | None]) -> None:
    """Make `impl(lookasides, args, kwargs)` the lookaside of the library function `target`. A second
    lookaside for the same function is an error, raised at import."""
    if id(target) in _LOOKASIDES:
        known = _LOOKASIDES[id(target)][1]
        name = getattr(target, "__qualname__", repr(target))
        names = [getattr(f, "__qualname__", None) or repr(f) for f in (known, impl)]
        raise ValueError(f"two lookasides for {name}: {names[0]} and {names[1]}")
    _LOOKASIDES[id(target)] = (target, impl)


def lookaside(*targets: object) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator of a `Lookasides` method `(self, args, kwargs) -> call or None`: the lookaside of
    each function in `targets`, used when the capture calls one of them."""

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        for target in targets:
            register_lookaside(target, impl)
        return impl

    return register


class Specials:
    """Finds the user-written special methods of types (cached per type and name)."""

    def __init__(
        self,
        step_into: Callable[[types.FunctionType], bool],
        found: Callable[[type, str], None] = lambda t, name: None,
    ) -> None:
        self._step_into = step_into
        self._found = found  # told of every method found: the tracer guards the class lookup
        self._cache: dict[tuple[type, str], Any] = {}

    def method(self, t: type, name: str) -> types.FunctionType | None:
        """`t.<name>` when it is a Python function the interpreter steps into, else None."""
        key = (t, name)
        try:
            fn = self._cache[key]
        except KeyError:
            fn = self._cache[key] = self._find(t, name)
        except TypeError:  # an unhashable metaclass instance: no caching
            fn = self._find(t, name)
        if fn is not None:
            self._found(t, name)
        return fn

    def _find(self, t: type, name: str) -> types.FunctionType | None:
        for klass in t.__mro__:
            if name in klass.__dict__:
                fn = klass.__dict__[name]
                if type(fn) is types.FunctionType and self._step_into(fn):
                    return fn
                return None
        return None

    def user_callable(self, fn: object) -> bool:
        """Whether calling `fn` runs user code the interpreter can step into."""
        if type(fn) is types.FunctionType:
            return self._step_into(fn)
        if type(fn) is types.MethodType:
            return self.user_callable(fn.__func__)
        if type(fn) is functools.partial:
            return self.user_callable(fn.func)
        if isinstance(fn, nn.Module):
            return True
        if isinstance(fn, type) or callable(fn) is False:
            return False
        if isinstance(fn, Jitted):
            return True
        return self.method(type(fn), "__call__") is not None

    def user_iterable(self, obj: object) -> bool:
        t = type(obj)
        return self.method(t, "__iter__") is not None or self.method(t, "__next__") is not None


def iterate(interp: Interpreter, specials: Specials, obj: object) -> Iterator[Any]:
    """Iterate `obj` as a `for` loop of interpreted code does (user `__iter__`/`__next__` interpreted,
    outside containers guarded by the tracer's `get_iter`)."""
    special = specials.method(type(obj), "__iter__")
    it = interp.call(special, (obj,), {}) if special is not None else interp.hooks.get_iter(obj)
    step = specials.method(type(it), "__next__")
    while True:
        try:
            value = interp.call(step, (it,), {}) if step is not None else next(it)
        except StopIteration:
            return
        interp.hooks.yielded(value)
        yield value


class Lookasides:
    """The lookasides of one capture: `find(fn, args, kwargs)` returns a replacement call or None."""

    def __init__(self, tracer: LookasideTracer, specials: Specials) -> None:
        self.tracer = tracer
        self.specials = specials

    @property
    def interp(self) -> Interpreter | None:
        return self.tracer.interpreter

    def find(self, fn: object, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        """A zero-argument callable doing `fn(*args, **kwargs)` with user callbacks interpreted, or
        None when the call has no user callback (or no interpreter is attached)."""
        if self.interp is None:
            return None
        found = _LOOKASIDES.get(id(fn))
        if found is not None:
            return found[1](self, args, kwargs)
        if type(fn) is types.BuiltinMethodType and fn.__name__ == "sort" and type(fn.__self__) is list:
            return self._list_sort(fn.__self__, args, kwargs)
        if type(fn) is _SCRIPT_FUNCTION:
            return script_function_call(self, fn, args, kwargs)
        if isinstance(fn, type) and issubclass(fn, dict):
            return dict_subclass_call(self, fn, args, kwargs)
        return None

    # ----------------------------------------------------------------- helpers
    def _call(self, fn: object, *args: object) -> Any:
        return self.interp.call(fn, args, {})

    @lookaside(builtins.iter)
    def _iter(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if len(args) != 1 or kwargs or self.specials.method(type(args[0]), "__iter__") is None:
            return None
        obj = args[0]
        special = self.specials.method(type(obj), "__iter__")

        def run() -> Any:
            it = self._call(special, obj)
            if not hasattr(type(it), "__next__"):
                raise TypeError(f"iter() returned non-iterator of type '{type(it).__name__}'")
            return it

        return run

    @lookaside(builtins.next)
    def _next(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if not 1 <= len(args) <= 2 or kwargs:
            return None
        step = self.specials.method(type(args[0]), "__next__")
        if step is None:
            return None

        def run() -> Any:
            try:
                return self._call(step, args[0])
            except StopIteration:
                if len(args) == 2:
                    return args[1]
                raise

        return run

    def _iterated(self, obj: object) -> Any:
        """What a lookaside iterates for `obj`: a user `__iter__`/`__next__` interpreted, else the
        tracer's `get_iter`, guarded as a `for` loop is (handed to native iteration, an outside list
        was read unguarded: `map(lambda v: x * v, self.scales)` kept its first result after
        `self.scales` changed). Made now: a non-iterable fails here, as the builtin would."""
        if self.specials.user_iterable(obj):
            return iterate(self.interp, self.specials, obj)
        return self.tracer.get_iter(obj)

    def _needs_iteration(self, values: tuple, modelled: bool = True) -> bool:
        """A user `__iter__`, or (`modelled`) a module container the tracer iterates (`list(self.layers)`)."""
        return any(
            self.specials.user_iterable(v) or (modelled and self.tracer.models_iteration(v)) for v in values
        )

    # ----------------------------------------------------------------- builtins with callbacks
    @lookaside(builtins.map)
    def _map(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if len(args) < 2 or kwargs:
            return None
        fn, iterables = args[0], args[1:]
        if not self.specials.user_callable(fn) and not self._needs_iteration(iterables):
            return None

        def run() -> Any:
            sources = [self._iterated(it) for it in iterables]
            iterators = [builtins.iter(s) for s in sources]  # map() checks iterability at once

            return self._reporting(self.interp.call(fn, items, {}) for items in zip(*iterators))

        return run

    @lookaside(builtins.filter)
    def _filter(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if len(args) != 2 or kwargs:
            return None
        fn, iterable = args
        user_fn = fn is not None and self.specials.user_callable(fn)
        if not user_fn and not self.specials.user_iterable(iterable):
            return None

        def run() -> Any:
            iterator = builtins.iter(self._iterated(iterable))

            def kept() -> Iterator[Any]:
                for item in iterator:
                    keep = item if fn is None else self.interp.call(fn, (item,), {})
                    if self.tracer.truth(keep):
                        yield item

            return self._reporting(kept())

        return run

    def _reporting(self, values: Iterator[Any]) -> Iterator[Any]:
        """The generator a lookaside returns for `map`/`filter`: each value it yields is reported to
        the tracer as yielded by it (Tracer.yielded: read if native code is reading, or was handed
        this generator, as `map(str, map(user_fn, xs))`)."""

        def gen() -> Iterator[Any]:
            for value in values:
                self.tracer.yielded(value, this)
                yield value

        this = gen()
        return this

    def _keys(self, items: list, key: object) -> list:
        return [self.interp.call(key, (item,), {}) for item in items]

    @lookaside(builtins.sorted)
    def _sorted(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if len(args) != 1 or set(kwargs) - {"key", "reverse"}:
            return None
        key = kwargs.get("key")
        user_key = key is not None and self.specials.user_callable(key)
        if not user_key and not self.specials.user_iterable(args[0]):
            return None

        def run() -> Any:
            items = list(self._iterated(args[0]))
            if not user_key:
                self.tracer.read_natively(items)  # compared by the builtin
                return self.tracer.fresh(sorted(items, **kwargs))
            keys = self._keys(items, key)
            self.tracer.read_natively(keys)
            order = sorted(
                range(len(items)), key=keys.__getitem__, reverse=bool(kwargs.get("reverse", False))
            )
            return self.tracer.fresh([items[i] for i in order])

        return run

    def _list_sort(self, target: list, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        key = kwargs.get("key")
        if args or set(kwargs) - {"key", "reverse"} or key is None or not self.specials.user_callable(key):
            return None
        if not self.tracer.is_fresh(target):
            return None  # an outside list sorted in place is not replayed: the tracer says so natively

        def run() -> None:
            keys = self._keys(list(target), key)
            self.tracer.read_natively(keys)
            keys = iter(keys)
            target.sort(key=lambda _item: next(keys), reverse=bool(kwargs.get("reverse", False)))

        return run

    def _extreme(self, which: Callable[..., Any], args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if not args or set(kwargs) - {"key", "default"}:
            return None
        key = kwargs.get("key")
        user_key = key is not None and self.specials.user_callable(key)
        single = len(args) == 1
        if not user_key and not (single and self.specials.user_iterable(args[0])):
            return None

        def run() -> Any:
            items = list(self._iterated(args[0])) if single else list(args)
            if not items:
                return which([], **kwargs) if "default" in kwargs else which([])  # the builtin's error
            if not user_key:
                self.tracer.read_natively((items, key))
                return which(items, **({"key": key} if key is not None else {}))
            keys = self._keys(items, key)
            self.tracer.read_natively(keys)
            return items[which(range(len(items)), key=keys.__getitem__)]

        return run

    @lookaside(builtins.min)
    def _min(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        return self._extreme(builtins.min, args, kwargs)

    @lookaside(builtins.max)
    def _max(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        return self._extreme(builtins.max, args, kwargs)

    @lookaside(functools.reduce)
    def _reduce(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if not 2 <= len(args) <= 3 or kwargs:
            return None
        fn, iterable = args[0], args[1]
        if not self.specials.user_callable(fn) and not self.specials.user_iterable(iterable):
            return None

        def run() -> Any:
            iterator = builtins.iter(self._iterated(iterable))
            if len(args) == 3:
                value = args[2]
            else:
                try:
                    value = next(iterator)
                except StopIteration:
                    raise TypeError("reduce() of empty iterable with no initial value") from None
            for item in iterator:
                value = self.interp.call(fn, (value, item), {})
            return value

        return run

    def _consume(self, args: tuple, kwargs: dict, consumer: Callable[..., Any]) -> Callable[[], Any] | None:
        """`list(obj)`, `zip(a, b)`, ... of a user `__iter__` or a module container (not for `any`/`all`,
        which take each submodule's truth natively: a container's length, guarded only by a whole read)."""
        positional = args if consumer is zip else args[:1]
        if not self._needs_iteration(positional, modelled=consumer is not any and consumer is not all):
            return None
        if consumer is dict and hasattr(type(args[0]), "keys"):
            return None  # a mapping: dict() reads it through keys() and [], not by iteration

        def run() -> Any:
            replaced = tuple(self._iterated(a) for a in positional) + tuple(args[len(positional) :])
            # as a native call of the tracer: what `sum`, `any`, `set`, ... read is seen (native_calls.py)
            return self.tracer.call_native(consumer, replaced, kwargs)

        return run

    @lookaside(builtins.sum)
    def _sum(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        """`sum(iterable[, start])` over an iterator (a generator, `map`, ...) or an object with a
        user `__iter__`: the items are taken first, then summed as a list, so that numbers read from
        tensor data stay graph values as in `sum` of a list (recorder.lazy_sum); the C builtin would
        read each as it is yielded. Equivalent: the builtin does nothing observable between items,
        and adding numbers cannot fail, except an int too large for a float; from the first item
        that is no such number on, the builtin adds the rest as it goes."""
        if not 1 <= len(args) <= 2 or set(kwargs) - {"start"}:
            return None
        start = args[1] if len(args) == 2 else kwargs.get("start", 0)
        if type(start) not in (int, float, bool, DataInt):
            return None  # `sum(xs, [])`, a tensor start: the builtin fails or adds at the first item
        iterable = args[0]
        if type(iterable) is _Rest:
            return None  # the rest of a sum handed to the builtin (below)
        user = self.specials.user_iterable(iterable)
        if not user and not (self.tracer.recorder.lazy and _is_iterator(iterable)):
            return None

        def run() -> Any:
            iterator = builtins.iter(self._iterated(iterable))
            items: list[Any] = []
            for item in iterator:
                items.append(item)
                t = type(item)
                if not (
                    t is float or ((t is int or t is bool or t is DataInt) and -_EXACT <= item <= _EXACT)
                ):
                    rest = _Rest(items, iterator)
                    return self.tracer.call_native(builtins.sum, (rest, *args[1:]), kwargs)
            return self.tracer.call_native(builtins.sum, (items, *args[1:]), kwargs)

        return run

    # ----------------------------------------------------------------- special methods
    @lookaside(builtins.bool)
    def _bool(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if len(args) != 1 or kwargs or not self.has_user_truth(args[0]):
            return None
        return lambda: self.truth(args[0])

    def has_user_truth(self, obj: object) -> bool:
        t = type(obj)
        return self.specials.method(t, "__bool__") is not None or (
            self.specials.method(t, "__len__") is not None and not hasattr(t, "__bool__")
        )

    @resumable(TRUTH)
    def truth(self, obj: object) -> bool:
        """`bool(obj)` through a user `__bool__` (or `__len__`), as CPython does."""
        t = type(obj)
        special = self.specials.method(t, "__bool__")
        if special is not None:
            result = self._call(special, obj)
            if type(result) is not bool:
                raise TypeError(f"__bool__ should return bool, returned {type(result).__name__}")
            return result
        return self.length(obj) != 0

    def length(self, obj: object) -> int:
        """`len(obj)` through a user `__len__`, with CPython's checks of the result."""
        result = self._call(self.specials.method(type(obj), "__len__"), obj)
        try:
            n = operator.index(result)
        except TypeError:
            raise TypeError(f"'{type(result).__name__}' object cannot be interpreted as an integer") from None
        if n < 0:
            raise ValueError("__len__() should return >= 0")
        return n

    def contains(self, container: object, item: object) -> Any:
        """`item in container` through a user `__contains__` or `__iter__`, or NOT_HANDLED."""
        t = type(container)
        special = self.specials.method(t, "__contains__")
        if special is not None:
            return bool(self.tracer.truth(self._call(special, container, item)))
        if not hasattr(t, "__contains__") and self.specials.method(t, "__iter__") is not None:
            for value in iterate(self.interp, self.specials, container):
                if value is item or self.tracer.truth(
                    self.tracer.call_native(operator.eq, (value, item), {})
                ):
                    return True
            return False
        return NOT_HANDLED

    def _text(self, obj: object, name: str) -> Any:
        special = self.specials.method(type(obj), name)
        if special is None and name == "__str__" and type(obj).__str__ is object.__str__:
            special = self.specials.method(type(obj), "__repr__")
        if special is None:
            return NOT_HANDLED
        result = self._call(special, obj)
        if not isinstance(result, str):
            raise TypeError(f"{name} returned non-string (type {type(result).__name__})")
        return result

    @lookaside(builtins.str)
    def _str(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if len(args) != 1 or kwargs or type(args[0]) is str or isinstance(args[0], type):
            return None
        if self._text_method(args[0], "__str__") is None:  # (a str subclass may define one: MONAI's StrEnum)
            return None
        return lambda: self._text(args[0], "__str__")

    @lookaside(builtins.repr)
    def _repr(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if len(args) != 1 or kwargs or self.specials.method(type(args[0]), "__repr__") is None:
            return None
        return lambda: self._text(args[0], "__repr__")

    def _text_method(self, obj: object, name: str) -> Any:
        special = self.specials.method(type(obj), name)
        if special is None and name == "__str__" and type(obj).__str__ is object.__str__:
            special = self.specials.method(type(obj), "__repr__")
        return special

    @lookaside(builtins.format)
    def _format(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if not 1 <= len(args) <= 2 or kwargs:
            return None
        obj, spec = args[0], (args[1] if len(args) == 2 else "")
        special = self.specials.method(type(obj), "__format__")
        if special is not None:
            return lambda: self._checked_format(self._call(special, obj, spec))
        if type(obj).__format__ is object.__format__ and self._text_method(obj, "__str__") is not None:
            if spec:
                return None  # object.__format__ raises TypeError natively, as in eager code
            return lambda: self._text(obj, "__str__")
        return None

    @staticmethod
    def _checked_format(result: object) -> str:
        if not isinstance(result, str):
            raise TypeError(f"__format__ must return a str, not {type(result).__name__}")
        return result

    @lookaside(builtins.hash)
    def _hash(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        if len(args) != 1 or kwargs:
            return None
        special = self.specials.method(type(args[0]), "__hash__")
        if special is None:
            return None

        def run() -> int:
            result = self._call(special, args[0])
            if not isinstance(result, int):
                raise TypeError("__hash__ method should return an integer")
            # CPython's slot: an int that fits in a C ssize_t is the hash (-1 is reserved: -2),
            # a larger one is reduced by hashing it
            if -(2**63) <= result < 2**63 and sys.maxsize == 2**63 - 1:
                return -2 if result == -1 else int(result)
            return hash(int(result))

        return run

    # ----------------------------------------------------------------- torch helpers
    @lookaside(FUNCTION_APPLY)
    def _function_apply(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        """`MyFunction.apply(...)` of a custom autograd Function: see autograd_functions.py."""
        if not is_function_apply(FUNCTION_APPLY, args):
            return None
        return lambda: capture_apply(self.tracer, args[0], args[1:], kwargs)

    @lookaside(torch.compiler.is_compiling)
    def _is_compiling(self, args: tuple, kwargs: dict) -> Callable[[], Any] | None:
        """`torch.compiler.is_compiling()` is True in the code jitlab.jit captures, as in the code
        TorchDynamo traces: libraries then take the path they keep for graph compilers (transformers
        skips its checks of attention masks on tensor values and its padding warnings). The graph
        replays that path on every hit; a call that runs eagerly sees False, as without a compiler."""
        if args or kwargs:
            return None
        answer = compiling_answer(self.tracer)
        return lambda: answer


class _Rest(itertools.chain):
    """The items a `sum` lookaside took, then the rest of its iterator, summed by the builtin."""


_EXACT = 2**53  # an int up to this is exact as a float: adding it to one never overflows


def _is_iterator(value: object) -> bool:
    """An iterator other than a list's or tuple's own iterable kinds (a generator, `map`, `zip`)."""
    return type(value) not in (list, tuple) and hasattr(type(value), "__next__")


for _consumer in (list, tuple, set, frozenset, any, all, enumerate, zip, dict):
    register_lookaside(_consumer, functools.partial(Lookasides._consume, consumer=_consumer))


# callables whose `__call__` is no user code to step into (an instance of a user class with a
# `__call__` is called through it)
BUILTIN_CALLABLE_TYPES = (
    type,
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
)
