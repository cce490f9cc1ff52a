"""Class statements in interpreted functions: `LOAD_BUILD_CLASS`, the class body's name opcodes, and
`build_class`, what the interpreter does where CPython calls `builtins.__build_class__`.

A function that defines a class (`class Options: factor = table[kind]`) used to run natively as a
whole: its reads went unwatched, so jitlab.jit made it a graph break. Now the body runs interpreted
like any function, with the namespace dict as its locals (LOAD_NAME looks there, then in the
globals through the hooks, which guard what they read), and the class is made from it with
`type(name, bases, namespace)`. The class and its instances are new objects of the call: what is
read from them needs no guard, while what they inherit from outside bases is guarded where it is
found (the tracer's class_lookups.py).

Run natively instead, as one call of `builtins.__build_class__` the hooks are told about
(`native_user_code`, which the tracer makes a graph break): a metaclass other than `type` or class
keywords (`class E(Enum)`, `metaclass=...`: the metaclass runs code of its own), a base that is not a
class (`__mro_entries__`: `NamedTuple`, `Generic[T]`), a base with its own `__init_subclass__`, and
a body using an opcode the interpreter leaves to CPython (type parameters). A namespace holding an
object with `__set_name__` is made by a native `type(...)` call the hooks are told about, as that
method runs on it.
"""

from __future__ import annotations

import builtins
import types
from typing import Any

from jitlab.jit.interpreter.frame import RunningInterpreter, code_info
from jitlab.jit.interpreter.ops_names import cell_value
from jitlab.jit.interpreter.registry import handler

BUILD_CLASS = builtins.__build_class__
_PY311 = ((3, 11),)
_PY312_ON = ((3, 12), (3, 13))


@handler("LOAD_BUILD_CLASS")
def LOAD_BUILD_CLASS(interp, frame, instr):
    try:
        frame.stack.append(frame.builtins["__build_class__"])
    except KeyError:
        raise NameError("__build_class__ not found") from None


@handler("LOAD_NAME")
def LOAD_NAME(interp, frame, instr):
    namespace = frame.namespace
    if namespace is not None and instr.argval in namespace:
        frame.stack.append(namespace[instr.argval])
    else:
        frame.stack.append(interp.hooks.load_global(frame.globals, instr.argval))


@handler("STORE_NAME")
def STORE_NAME(interp, frame, instr):
    frame.namespace[instr.argval] = frame.stack.pop()


@handler("DELETE_NAME")
def DELETE_NAME(interp, frame, instr):
    try:
        del frame.namespace[instr.argval]
    except KeyError:
        raise NameError(f"name '{instr.argval}' is not defined") from None


@handler("SETUP_ANNOTATIONS")
def SETUP_ANNOTATIONS(interp, frame, instr):
    if "__annotations__" not in frame.namespace:
        frame.namespace["__annotations__"] = interp.hooks.fresh({})


@handler("LOAD_CLASSDEREF", versions=_PY311)
def LOAD_CLASSDEREF(interp, frame, instr):
    """A free variable read in a class body: the namespace first, then the enclosing function's cell."""
    name = instr.argval
    if name in frame.namespace:
        frame.stack.append(frame.namespace[name])
    else:
        frame.stack.append(cell_value(interp, frame, name))


@handler("LOAD_LOCALS", versions=_PY312_ON)
def LOAD_LOCALS(interp, frame, instr):
    if frame.namespace is None:
        raise SystemError("no locals found")
    frame.stack.append(frame.namespace)


@handler("LOAD_FROM_DICT_OR_DEREF", versions=_PY312_ON)
def LOAD_FROM_DICT_OR_DEREF(interp, frame, instr):
    mapping = frame.stack.pop()
    name = instr.argval
    if name in mapping:
        frame.stack.append(mapping[name])
    else:
        frame.stack.append(cell_value(interp, frame, name))


def natively_because(args: tuple, kwargs: dict) -> str | None:
    """Why the class statement `__build_class__(*args, **kwargs)` runs natively (see the module
    docstring), or None."""
    if len(args) < 2:
        return "__build_class__ needs a body and a name"  # CPython raises its own error
    func, name, *bases = args
    if type(func) is not types.FunctionType:
        return f"class {name}: its body is not a function"
    if kwargs:
        return f"class {name}: a metaclass or class keywords"
    for base in bases:
        if not isinstance(base, type):
            return f"class {name}: the base {base!r} is not a class"
        if type(base) is not type:
            return f"class {name}: the metaclass {type(base).__qualname__}"
        if any("__init_subclass__" in k.__dict__ for k in base.__mro__ if k is not object):
            return f"class {name}: the base {base.__qualname__} defines __init_subclass__"
    why = code_info(func.__code__).unsupported
    return None if why is None else f"class {name}: {why}"


def build_class(interp: RunningInterpreter, args: tuple, kwargs: dict) -> Any:
    """`builtins.__build_class__(func, name, *bases)` with the body interpreted, for a statement
    `natively_because` accepts."""
    func, name, *bases = args
    namespace = interp.hooks.fresh({})
    cell = interp.run_class_body(func, namespace)
    if any(hasattr(type(value), "__set_name__") for value in namespace.values()):
        interp.hooks.native_user_code(type, f"class {name}: a class attribute with __set_name__")
        cls = interp.hooks.call_native(type, (name, tuple(bases), namespace), {})
    else:
        cls = type(name, tuple(bases), namespace)
    if isinstance(cell, types.CellType) and cell.cell_contents is not cls:
        raise TypeError(f"__class__ set to {cell.cell_contents!r} defining {name!r} as {cls!r}")
    return interp.hooks.fresh(cls)
