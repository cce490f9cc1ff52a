"""The interface between the interpreter and whatever watches it (the JIT's tracer).

The interpreter executes bytecode faithfully on concrete values; every read from or write to the
world outside the interpreted frames goes through one of these methods, so a tracer can record where
values came from (for guards) and which effects happened (for replay). The base class does the plain
thing and records nothing, which makes the interpreter usable (and testable) on its own.
"""

from __future__ import annotations

import builtins
import os
import types
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from jitlab.jit.interpreter.sites import TRUTH, resumable


class Hooks:
    """Plain behaviour: every operation runs natively, nothing is recorded.

    The program's values reach the hooks as `object`: whatever the interpreted code holds. An
    operation a value does not support (`len(3)`) raises here as it does in CPython."""

    def step_into(self, func: types.FunctionType) -> bool:
        """Whether to interpret `func` rather than call it natively."""
        return is_user_code(func.__code__)

    def native_user_code(self, func: types.FunctionType, reason: str) -> None:
        """`func` is user code the interpreter cannot step into; it will run natively."""

    def intercept_call(self, fn: object, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
        """Replace a call by another one (e.g. a module call by its forward), or None."""
        return None

    def class_lookup(self, klass: type, name: str) -> None:
        """The interpreter is about to use what the lookup of `name` along `klass.__mro__` finds (a
        user-written `__init__`, property or `__getitem__` it steps into)."""

    def entering(self, func: types.FunctionType, bound: dict[str, Any]) -> None:
        """`func` is about to be interpreted with `bound` locals, some of which may be its default
        values (what it runs, its code and defaults, are writable attributes of the function)."""

    def call_native(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        return fn(*args, **kwargs)

    def load_global(self, globals_: dict[str, Any], name: str) -> Any:
        try:
            return globals_[name]
        except KeyError:
            pass
        builtins_ = globals_.get("__builtins__", builtins)
        if isinstance(builtins_, types.ModuleType):
            builtins_ = builtins_.__dict__
        try:
            return builtins_[name]
        except KeyError:
            raise NameError(f"name '{name}' is not defined") from None

    def store_global(self, globals_: dict[str, Any], name: str, value: object) -> None:
        globals_[name] = value

    def delete_global(self, globals_: dict[str, Any], name: str) -> None:
        try:
            del globals_[name]
        except KeyError:
            raise NameError(f"name '{name}' is not defined") from None

    def load_attr(self, obj: object, name: str) -> Any:
        return getattr(obj, name)

    def store_attr(self, obj: object, name: str, value: object) -> None:
        setattr(obj, name, value)

    def delete_attr(self, obj: object, name: str) -> None:
        delattr(obj, name)

    def load_item(self, container: object, key: object) -> Any:
        return container[key]

    def store_item(self, container: object, key: object, value: object) -> None:
        container[key] = value

    def delete_item(self, container: object, key: object) -> None:
        del container[key]

    def load_cell(self, cell: types.CellType, owner_is_fresh: bool) -> Any:
        return cell.cell_contents

    def bound_self(self, method: types.MethodType) -> Any:
        """The object a bound method is bound to, about to be the first argument of its function."""
        return method.__self__

    def store_cell(self, cell: types.CellType, value: object) -> None:
        cell.cell_contents = value

    def is_fresh(self, obj: object) -> bool:
        """Whether `obj` was created by interpreted code (no outside effects when it changes)."""
        return True

    @resumable(TRUTH)
    def truth(self, value: object) -> bool:
        return bool(value)

    def length(self, obj: object) -> int:
        return len(obj)

    def get_iter(self, obj: object) -> Any:
        return iter(obj)

    def hashed(self, value: object) -> Any:
        """`value` is about to be hashed by interpreted code (a set item, a dict key of a literal or
        comprehension); returns what to store."""
        return value

    def yielded(self, value: object, generator: object = None) -> None:
        """A generator the interpreter runs (`generator`, when it is an InterpretedGenerator) hands
        `value` to whoever resumed it (interpreted code, or native code such as `max(gen)`)."""

    #: strings formatted by `lazy_format` whose text nothing has read yet (by id; empty here)
    pending_texts: Mapping[int, Any] = MappingProxyType({})

    def lazy_format(self, value: object, spec: str, conversion: int) -> str | None:
        """An f-string field `format(value, spec)` (after `!s`, `!r`, `!a` by `conversion`, 0 for
        none) whose string goes straight into a call (frame.text_goes_to_call): a str to use, whose
        reading the hooks put off until that call (`settle_texts`), or None to format it natively."""
        return None

    def build_string(self, parts: list[str]) -> str:
        """An f-string joined from its parts (BUILD_STRING)."""
        return "".join(parts)

    def settle_texts(self, fn: object, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
        """A call while `pending_texts` is not empty: the callable and arguments to call, or None
        when the call is known to do nothing and return None, its pending strings left unread."""
        return fn, args, kwargs

    def fresh(self, obj: object) -> Any:
        """`obj` was created by interpreted code (a literal, a comprehension, a new instance)."""
        return obj

    def fresh_function(self, func: types.FunctionType) -> None:
        """A function object was created by MAKE_FUNCTION inside interpreted code."""


#: jitlab/jit, with a trailing separator: code there is jitlab.jit's own, never the user's
JIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIBRARY_PREFIXES: tuple[str, ...] = ()


def library_prefixes() -> tuple[str, ...]:
    """Folders of library code (standard library, site-packages, torch, jitlab.jit), real paths."""
    global _LIBRARY_PREFIXES
    if not _LIBRARY_PREFIXES:
        import sysconfig

        import torch

        paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
        paths.add(os.path.dirname(torch.__file__))
        paths.add(JIT_DIR)
        _LIBRARY_PREFIXES = tuple(os.path.realpath(p) + os.sep for p in paths)
    return _LIBRARY_PREFIXES


_USER_CACHE: dict[str, bool] = {}


def class_read_by_jitlab(frame: types.FrameType) -> bool:
    """Whether `frame` runs, natively, a class's Python `__getattribute__` reading `__class__` for
    jitlab.jit's own code, or code that such a read called in turn. `isinstance(value, T)` reads
    `value.__class__` through the type's `__getattribute__` when `type(value)` is not a T, and
    jitlab.jit asks isinstance of every value it meets; a configuration class with its own
    `__getattribute__` (transformers' `PreTrainedConfig`) would otherwise count as user code run
    natively and make the capture fall back. The read is jitlab's, not the program's: the program
    neither sees its result nor would make it eagerly."""
    outermost = None
    while frame is not None and not frame.f_code.co_filename.startswith(JIT_DIR):
        outermost, frame = frame, frame.f_back
    if frame is None or outermost is None or outermost.f_code.co_name != "__getattribute__":
        return False
    names = outermost.f_code.co_varnames
    return outermost.f_code.co_argcount == 2 and outermost.f_locals.get(names[1]) == "__class__"


#: file names CPython and IPython give code typed interactively: the user's own code too
INTERACTIVE_FILENAMES = ("<stdin>", "<console>", "<ipython-input-")


def is_user_code(code: types.CodeType) -> bool:
    """User code = a real source file outside the standard library, site-packages, torch and jitlab.jit,
    or code typed at an interactive prompt (`python -`, the REPL, IPython)."""
    filename = code.co_filename
    known = _USER_CACHE.get(filename)
    if known is None:
        import os

        if filename.startswith("<"):
            known = filename.startswith(INTERACTIVE_FILENAMES)
        else:
            known = not os.path.realpath(filename).startswith(library_prefixes())
        _USER_CACHE[filename] = known
    return known
