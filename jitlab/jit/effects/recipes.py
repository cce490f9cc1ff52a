"""Objects made by a native constructor during the call, rebuilt on a hit by calling it again.

A program may build an object of a library class from graph values and return it (or store it
outside): an actor-critic network returns `torch.distributions.Categorical(probs)`, a loss returns
`NotImplementedError("...")` on an unsupported configuration. The constructor ran natively (library
code), so the object is of unknown origin to the tracer, and its `__dict__` holds values the graph
computed while the constructor ran. For classes whose constructor only computes the object from its
arguments, without side effects, the entry calls the constructor again on every hit with the same
arguments rebuilt (tensors from the graph's outputs): the very call eager code makes, so the object,
and what the constructor checks (a distribution's `validate_args` raising `ValueError` on bad
parameters), are eager's. Those classes are:

- `torch.distributions.Distribution` subclasses defined in torch (`Categorical`, `Normal`,
  `Independent`, ...): their `__init__` stores and broadcasts parameters and validates them;
- built-in exception classes (`NotImplementedError("...")`): they store their arguments.

What makes a rebuild different from the object eager code returns is refused (`Recipe.why_not`): an
argument that is not a tensor, a number, a string, a dtype, a device, a size, None, a tuple of those or
another such rebuilt object (a container could change after the call); a tensor argument changed in
place after the constructor (its version counter moved: the constructor would see the new values);
and an object changed after it was made (an attribute set or replaced, a note added to or a traceback
set on an exception), except the values a distribution caches on first use (`lazy_property`), which
the rebuilt object computes again from the same parameters.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.distributions import Distribution
from torch.distributions.utils import lazy_property

from jitlab.jit.errors import Unsupported
from jitlab.jit.reasons import ReasonKind

_ATOMS = (int, float, bool, str, complex, type(None), torch.dtype, torch.device)
_EXCEPTION_STATE = ("__traceback__", "__cause__", "__context__")


@dataclass
class Recipe:
    """How to make `obj` again: `cls(*args, **kwargs)`; what it was like when made."""

    obj: object
    cls: type
    args: tuple
    kwargs: dict
    state: dict[str, int]  # ids of the object's attributes right after the constructor
    versions: list[tuple[torch.Tensor, int]]  # tensor arguments and their version counters then
    exc_args: tuple | None  # an exception's `args` then

    def why_not(self, recipes: dict[int, Recipe]) -> str | None:
        """Why rebuilding now would not give the object the program has, or None."""
        name = self.cls.__name__
        for tensor, version in self.versions:
            if _version(tensor) != version:
                return f"cannot rebuild a {name}: a tensor given to it was changed in place afterwards"
        for value in _arguments(self.args, self.kwargs):
            if not isinstance(value, (*_ATOMS, torch.Tensor)) and id(value) not in recipes:
                return f"cannot rebuild a {name} made from a {type(value).__name__}"
            if id(value) in recipes and (inner := recipes[id(value)].why_not(recipes)) is not None:
                return inner
        now = getattr(self.obj, "__dict__", {})
        for key, value in now.items():
            if key in self.state:
                if id(value) != self.state[key]:
                    return f"cannot rebuild a {name} whose attribute {key} was replaced after it was made"
            elif not isinstance(getattr(self.cls, key, None), lazy_property):
                return f"cannot rebuild a {name} given the attribute {key} after it was made"
        if len(now) < len(self.state):
            return f"cannot rebuild a {name} that lost attributes after it was made"
        if self.exc_args is not None:
            if self.obj.args is not self.exc_args and self.obj.args != self.exc_args:
                return f"cannot rebuild a {name} whose args changed after it was made"
            if any(getattr(self.obj, attr) is not None for attr in _EXCEPTION_STATE):
                return f"cannot rebuild a {name} that was raised or chained"
        return None

    def call_text(self, recipes: dict[int, Recipe], write: Callable[[Any], str], cls_name: str) -> str:
        """`T(a, b, k=v, )`: the call that makes the object again, each argument written by `write`
        (the replayed effects and the state resumed after a break both render it). Raises
        Unsupported when rebuilding now would not give the object the program has."""
        problem = self.why_not(recipes)
        if problem is not None:
            raise Unsupported(problem, ReasonKind.UNTRACKED_VALUE)
        args = "".join(write(a) + ", " for a in self.args)
        kwargs = "".join(f"{k}={write(v)}, " for k, v in self.kwargs.items())
        return f"{cls_name}({args}{kwargs})"


def recipe_for(fn: object, args: tuple, kwargs: dict, result: object) -> Recipe | None:
    """A recipe for `result = fn(*args, **kwargs)`, a native call, when `fn` is a class whose
    constructor is free of side effects (see the module doc) and `result` a new instance of it."""
    if not isinstance(fn, type) or type(result) is not fn or any(result is a for a in args):
        return None
    if not _side_effect_free(fn):
        return None
    versions = []
    for value in _arguments(args, kwargs):
        if isinstance(value, torch.Tensor):
            if value.is_inference():
                return None  # no version counter to tell a later in-place change
            versions.append((value, _version(value)))
    state = {key: id(value) for key, value in getattr(result, "__dict__", {}).items()}
    exc_args = result.args if isinstance(result, BaseException) else None
    return Recipe(result, fn, tuple(args), dict(kwargs), state, versions, exc_args)


def _version(tensor: torch.Tensor) -> int:
    """The tensor's version counter, read past the graph recorder (a read of tensor metadata that is
    jitlab's own, not the program's)."""
    with torch._C.DisableTorchFunction():
        return tensor._version


def validates_only(fn: object) -> bool:
    """Whether `fn` is the constructor of a torch distribution: its decisions on tensor data only
    decide whether it raises (`validate_args`), so the entry checks them instead of specialising."""
    return isinstance(fn, type) and issubclass(fn, Distribution) and _side_effect_free(fn)


def _side_effect_free(cls: type) -> bool:
    if issubclass(cls, BaseException):
        return cls.__module__ == "builtins"
    if issubclass(cls, Distribution):
        # a torch class all the way down (typing.Generic among its bases), or a program's subclass
        # that only adds methods (`FixedCategorical` with `log_probs` and `mode`, as actor-critic code
        # writes it); a subclass with its own __init__ is interpreted, and its object rebuilt from its
        # attributes (replay.plain_instance)
        own = [base for base in cls.__mro__ if not _torch_class(base)]
        return not own or all(_adds_methods_only(base, cls) for base in own)
    return False


def _torch_class(cls: type) -> bool:
    return (cls.__module__ or "").startswith("torch.") or cls in (object, typing.Generic)


#: what a class body sets besides its methods (CPython 3.11-3.13)
_CLASS_METADATA = frozenset(
    {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__annotations__",
     "__firstlineno__", "__static_attributes__", "__orig_bases__", "__parameters__"}
)  # fmt: skip


def _adds_methods_only(base: type, cls: type) -> bool:
    """Whether the program's class `base` (in `cls`'s MRO) defines only plain methods, none of them
    named like anything torch's constructors of `cls` use: then constructing `cls` does what the
    torch class does, whose constructor is free of side effects."""
    used = _constructor_names(next(b for b in cls.__mro__ if _torch_class(b) and b is not object))
    for name, value in vars(base).items():
        if name in _CLASS_METADATA:
            continue
        if type(value) is not types.FunctionType or name.startswith("__") or name in used:
            return False
    return True


@functools.cache
def _constructor_names(cls: type) -> frozenset[str]:
    """Every name the torch constructor of `cls` may look up, directly or through the torch methods
    and properties it reaches by those names (a closure over their code)."""
    names: set[str] = set()
    pending = [c.__dict__["__init__"].__code__ for c in cls.__mro__ if "__init__" in c.__dict__ and _torch_class(c)
               and type(c.__dict__["__init__"]) is types.FunctionType]  # fmt: skip
    seen: set[types.CodeType] = set()
    while pending:
        code = pending.pop()
        if code in seen:
            continue
        seen.add(code)
        pending.extend(const for const in code.co_consts if isinstance(const, types.CodeType))
        for name in code.co_names:
            names.add(name)
            member = inspect.getattr_static(cls, name, None)
            member = (
                getattr(member, "fget", None)
                or getattr(member, "wrapped", None)
                or getattr(member, "__func__", member)
            )
            if type(member) is types.FunctionType:
                pending.append(member.__code__)
    constraints = inspect.getattr_static(cls, "arg_constraints", None)
    if isinstance(constraints, dict):  # Distribution.__init__ reads each parameter by its name
        names.update(constraints)
    return frozenset(names)


def _arguments(args: tuple, kwargs: dict) -> list[Any]:
    """The arguments, with the items of tuples (and sizes) in them: what a rebuild writes again."""
    out: list[Any] = []
    stack = [*args, *kwargs.values()]
    while stack:
        value = stack.pop()
        if type(value) in (tuple, torch.Size) and len(out) < 10_000:
            stack.extend(value)
        else:
            out.append(value)  # a list or dict is kept whole: `why_not` refuses it
    return out
