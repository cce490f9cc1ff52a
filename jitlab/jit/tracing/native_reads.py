"""What native code can read: the data-dependent numbers reachable from the values it is handed.

With the eager backend a number read from tensor data (`tolist()`, `.item()`, `int(t)`) stays a graph
value while only tensor operations use it, and becomes a speculation, re-checked on every hit, once
Python reads it (graph/recorder.py). Interpreted code's reads are seen one by one. Native code (a C
builtin, a library function the interpreter does not step into) is not watched, and it reads whatever
it can reach from what it is given, not only its arguments: the list behind a bound method
(`max(range(n), key=scores.__getitem__)`), the lists under an iterator (`max(zip(scores, idx))`),
a partial's arguments, a function's closure, an object's attributes. A value it reads but the capture
does not re-check would be baked into the entry: a wrong result on the next call with other data.

`lazy_values_reached` walks those objects with `gc.get_referents`, which runs no Python code (no user
`__iter__`, property or `__getattr__` is called), and returns the graph entries of the data-dependent
values it finds. Not walked: tensors (what torch reads of them is recorded), classes, modules, code,
the globals of functions, and generators, whose values are seen as they are yielded instead
(`Tracer.yielded`: every value an interpreted generator yields after native code was handed it, as
to `map(str, gen)` advanced later by a `for` loop). The walk is bounded; past `LIMIT` objects it gives up and the caller must count
every data-dependent value as read.
"""

from __future__ import annotations

import builtins
import functools
import gc
import inspect
import itertools
import operator
import types
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import torch

from jitlab.jit.graph.data_values import DataInt
from jitlab.jit.graph.plain import plain_key
from jitlab.jit.guards.kinds import defines
from jitlab.jit.interpreter.generators import InterpretedGenerator


class EntryRecorder(Protocol):
    """What the walk uses of the graph recorder: the lazy entry of a number, if it is one."""

    def lazy_entry(self, value: object) -> tuple[Any, ...] | None: ...


LIMIT = 2000  # objects looked through per native call before every data-dependent value counts as read

# values with no parts that could hold a data-dependent number
_ATOMS = frozenset({str, bytes, bool, int, complex, type(None), type(Ellipsis), type(NotImplemented), range})
# values whose parts native code reads through recorded or guarded paths, or not at all
_OPAQUE = (
    type,
    types.ModuleType,
    types.CodeType,
    types.FrameType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
    InterpretedGenerator,
    torch.Tensor,
)


def lazy_values_reached(
    recorder: EntryRecorder, roots: Iterable[object], generators: dict[int, Any], limit: int = LIMIT
) -> tuple[list[tuple], bool]:
    """The lazy entries (recorder.lazy_entry) of the data-dependent numbers reachable from `roots`,
    and whether the walk saw everything (False: it stopped after `limit` objects). The interpreted
    generators reached are added to `generators` (by id): what they yield from now on is read."""
    found: list[tuple] = []
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        value = stack.pop()
        t = type(value)
        if t is float or t is DataInt:
            entry = recorder.lazy_entry(value)
            if entry is not None:
                found.append(entry)
            continue
        if t in _ATOMS or isinstance(value, _OPAQUE) or id(value) in seen:
            if t is InterpretedGenerator or t is types.GeneratorType:
                generators[id(value)] = value
            continue
        seen.add(id(value))
        if len(seen) > limit:
            return found, False
        stack.extend(_parts(value))
    return found, True


def outside_values_reached(
    roots: Iterable[object], guarded: Callable[[object], bool], limit: int = LIMIT
) -> tuple[list[Any], bool]:
    """The guarded outside values (`guarded`: outside the call, with a source) that native code can
    reach through the values the call made that it is handed: `torch.tensor([OUTSIDE_LIST, ...])`,
    `"{c.scale}".format_map({"c": obj})`, `sum(map(attrgetter("scale"), [obj]))`. The walk goes
    through what the call made (and what native code made in it) and stops at each guarded value,
    which the caller reads whole; and whether it saw everything (False: it stopped after `limit`
    objects)."""
    found: list[Any] = []
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        value = stack.pop()
        t = type(value)
        if t in _ATOMS or t is float or t is DataInt or isinstance(value, _OPAQUE) or id(value) in seen:
            continue
        seen.add(id(value))
        if guarded(value):
            found.append(value)
            continue
        if len(seen) > limit:
            return found, False
        stack.extend(_parts(value))
    return found, True


#: containers, whose items a value-blind builtin copies or counts without reading them
PLAIN_CONTAINERS = (list, tuple, dict, set, frozenset)
#: iterators that call code on each step (`list(map(attrgetter("scale"), objs))` reads `scale`)
CALLING_ITERATORS = (
    map,
    filter,
    itertools.starmap,
    itertools.filterfalse,
    itertools.takewhile,
    itertools.dropwhile,
    itertools.groupby,
    itertools.accumulate,
)


#: functions that look at a callable's code and signature only, not at the object a bound method
#: is bound to (transformers' output capturing asks `inspect.signature(module.forward)` in every
#: forward: reading the module tree whole for it cost BERT 148 more guards per call)
_INTROSPECTION_IDS = frozenset(
    map(
        id,
        (
            inspect.signature,
            inspect.getfullargspec,
            inspect.isfunction,
            inspect.ismethod,
            inspect.isclass,
            inspect.isroutine,
            inspect.iscoroutinefunction,
            inspect.isgeneratorfunction,
        ),
    )
)


def hands_on_unread(fn: object, values: Iterable[object]) -> bool:
    """Whether native `fn` reads nothing inside `values`: a value-blind builtin (`len`, `list`,
    `zip`, `next`, ...) given containers, or iterators that call no code as they step (an
    `enumerate` over a list hands its items on; one over a `map` runs the map's function)."""
    if id(fn) in _INTROSPECTION_IDS:
        return True
    if not (value_blind(fn) or id(fn) in READS_NO_NUMBER or fn is dict):  # `dict(output)` copies
        return False
    return not any(_calls_code_when_iterated(v) for v in values)


def _calls_code_when_iterated(value: object, depth: int = 0) -> bool:
    """Whether stepping `value` (an iterator, or iterators wrapped in one another) calls code: the
    chain is followed through iterator objects, not into containers, whose items are not called."""
    if isinstance(value, CALLING_ITERATORS):
        return True
    t = type(value)
    if depth > 8 or t in _ATOMS or isinstance(value, _OPAQUE):
        return False
    if t is tuple and depth:  # an iterator's own tuple of iterators (`zip`'s)
        return any(_calls_code_when_iterated(part, depth + 1) for part in value)
    if t in PLAIN_CONTAINERS or not defines(t, "__next__"):
        return False
    return any(_calls_code_when_iterated(part, depth + 1) for part in gc.get_referents(value))


def _parts(value: object) -> list[Any]:
    """What native code can reach from `value` in one step."""
    t = type(value)
    if t is types.FunctionType:  # its closure and defaults; its globals are the module's, not walked
        parts: list[Any] = list(value.__closure__ or ())
        parts.extend(value.__defaults__ or ())
        if value.__kwdefaults__:
            parts.append(value.__kwdefaults__)
        return parts
    if t is types.CellType:
        try:
            return [value.cell_contents]
        except ValueError:  # an empty cell
            return []
    if t is slice:  # not a gc object
        return [value.start, value.stop, value.step]
    if t is types.BuiltinMethodType:  # `scores.__getitem__`, `scores.index`: the object they are bound to
        return [value.__self__]
    return gc.get_referents(value)


_VALUE_BLIND_BUILTINS = {"isinstance", "issubclass", "type", "id", "callable", "print", "len"}


def value_blind(fn: object) -> bool:
    """A builtin that never reads the value of a number it is given (`len`, `isinstance`, ...), or a
    list method that only stores it (`append`, `extend`: the replay writes the graph's value)."""
    if fn is list or fn is tuple or fn is enumerate or fn is zip or fn is reversed or fn is dict.update:
        return True  # they copy or pair items without reading them (`f(**kwargs)` merges with update)
    if fn is torch.is_tensor:
        return True  # a type test (torch.optim asks it of the learning rate)
    if type(fn) is not types.BuiltinFunctionType:
        return False
    owner = getattr(fn, "__self__", None)
    if owner is builtins:
        return fn.__name__ in _VALUE_BLIND_BUILTINS
    return type(owner) is list and fn.__name__ in ("append", "extend")


# builtins that read no number they are handed: they look up, step or store it
READS_NO_NUMBER = frozenset(
    map(id, (builtins.next, builtins.iter, builtins.getattr, builtins.hasattr, builtins.setattr))
)
# ... and those that return what the code they call made without reading it (`float(t)` returns the
# number `Tensor.__float__` made, `next(gen)` the one the generator yielded)
_RETURNS_UNREAD = READS_NO_NUMBER | frozenset(map(id, (float, int, bool, complex, operator.index)))


GENERATORS = (InterpretedGenerator, types.GeneratorType)


def reads_values(fn: object, args: tuple) -> bool:
    """Whether native `fn` may read the Python values it reaches (see NativeCalls.run_native)."""
    return id(fn) not in _RETURNS_UNREAD and not passes_lazy_values(fn, args)


def plain_args(fn: object, args: tuple) -> tuple:
    """The arguments of a native call that reads them, with DataInts (now re-checked) made plain
    ints, so that native code gets and stores what eager code has (`seen.add(k)`); the items of a
    list or tuple handed to a set or dict builder (`set(ks)`, `s.update(ks)`) too, on a copy: those
    builders only read it."""
    if not any(type(a) is DataInt or type(a) in (list, tuple) for a in args):
        return args
    owner = getattr(fn, "__self__", None)
    builds = fn is set or fn is frozenset or isinstance(owner, (set, frozenset)) or owner is dict
    return tuple(
        int(a)
        if type(a) is DataInt
        else type(a)(map(plain_key, a))
        if builds and type(a) in (list, tuple)
        else a
        for a in args
    )


def passes_lazy_values(fn: object, args: tuple) -> bool:
    """Whether a call only hands data-dependent floats on to torch (which records them) unread."""
    if value_blind(fn):
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
    if type(fn) is types.FunctionType and fn.__module__ == "torch.nn.functional":
        # written in Python, but handing its arguments to torch's function modes before it reads
        # them (`has_torch_function`): the recorder records the call whole (F.interpolate's size)
        return id(fn) in _dispatching_functionals()
    return False


@functools.cache
def _dispatching_functionals() -> frozenset[int]:
    """The functions of torch.nn.functional that torch lists as overridable."""
    import torch.nn.functional as F  # noqa: N812
    from torch.overrides import get_overridable_functions

    return frozenset(map(id, get_overridable_functions().get(F, ())))
