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

import gc
import types
from collections.abc import Iterable
from typing import Any

import torch

from jitlab.jit.graph.data_values import DataInt
from jitlab.jit.interpreter.generators import InterpretedGenerator

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
    recorder: Any, roots: Iterable[Any], generators: dict[int, Any], limit: int = LIMIT
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


def _parts(value: Any) -> list[Any]:
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
