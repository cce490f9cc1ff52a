"""Resolving what to diagnose: `TARGET` (`path.py:function` or `package.module:function`) and the
function named by `--inputs` that returns the arguments, `(args, kwargs)`.

The scaling check needs the same call at twice the input size. An inputs function with a `scale`
parameter is asked for it (`make_inputs(scale=2)`); otherwise every tensor argument is doubled
along dimension 0 (repeated), which fits batch-like inputs.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from jitlab.doctor.location import format_location, is_user_file
from jitlab.errors import UserError
from jitlab.userfiles import import_file

SYNTAX = "give it as path.py:function or package.module:function"


@dataclass(frozen=True)
class Target:
    """The user's function, where it was found, and the file it is defined in."""

    spec: str
    function: Callable[..., Any]
    module: ModuleType
    file: str | None


@dataclass
class Inputs:
    """Arguments for one call; `scaled()` gives them at twice the size (or raises UserError)."""

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: the inputs function when it accepts `scale`; None when scaling doubles tensors along dim 0
    factory: Callable[..., Any] | None = None
    spec: str | None = None

    def scaled(self, factor: int = 2) -> tuple[Inputs, str]:
        """The inputs at `factor` times the size, and how they were made (for the report)."""
        if self.factory is not None:
            return call_inputs(
                self.factory, self.spec or "--inputs", scale=factor
            ), f"{self.spec}(scale={factor})"
        import torch

        def grow(value: Any) -> Any:
            if isinstance(value, torch.Tensor) and value.dim() >= 1:
                return torch.cat([value] * factor, dim=0)
            return value

        args = tuple(grow(a) for a in self.args)
        kwargs = {k: grow(v) for k, v in self.kwargs.items()}
        return Inputs(args, kwargs), f"every tensor argument repeated {factor}x along dimension 0"


def split_spec(spec: str, what: str) -> tuple[str, str]:
    module_part, sep, attribute = spec.rpartition(":")
    if not sep or not module_part or not attribute:
        raise UserError(f"{what} {spec!r} names no function: {SYNTAX}")
    return module_part, attribute


def _is_path(module_part: str) -> bool:
    return module_part.endswith(".py") or "/" in module_part or "\\" in module_part


def load_module(module_part: str, what: str) -> tuple[ModuleType, str | None]:
    """Import a module by file path or dotted name; the user's import errors become one line."""
    if _is_path(module_part):
        file = Path(module_part).resolve()
        module = import_file(file, f"{what} file", prefix="_jitlab_doctor")
        return module, str(file)
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: modules in the working directory are found
    try:
        module = importlib.import_module(module_part)
    except ModuleNotFoundError as exc:
        if exc.name and module_part.startswith(exc.name):
            raise UserError(f"{what} module {module_part!r} not found: {SYNTAX}") from exc
        raise UserError(f"{what} module {module_part} failed to import: {describe_exception(exc)}") from exc
    except Exception as exc:
        raise UserError(f"{what} module {module_part} failed to import: {describe_exception(exc)}") from exc
    return module, getattr(module, "__file__", None)


def lookup(module: ModuleType, attribute: str, spec: str, what: str) -> Any:
    value: Any = module
    owner = spec.rpartition(":")[0]
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise UserError(f"{what} {spec}: {owner} has no attribute {attribute!r}: check the name")
        value = getattr(value, part)
    if not callable(value):
        raise UserError(f"{what} {spec} is not callable (it is a {type(value).__name__}): name a function")
    return value


def resolve_target(spec: str) -> Target:
    module_part, attribute = split_spec(spec, "target")
    module, file = load_module(module_part, "target")
    function = lookup(module, attribute, spec, "target")
    code_file = getattr(getattr(function, "__code__", None), "co_filename", None)
    return Target(spec=spec, function=function, module=module, file=code_file or file)


def describe_exception(exc: BaseException) -> str:
    """`Type: message (at file:line)`, the line being the innermost one in the user's code."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
    where = f" (at {format_location(frames[-1].filename, frames[-1].lineno or 0)})" if frames else ""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}{': ' + message if message else ''}{where}"


def accepts_scale(function: Callable[..., Any]) -> bool:
    try:
        return "scale" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def call_inputs(function: Callable[..., Any], spec: str, **kwargs: Any) -> Inputs:
    try:
        value = function(**kwargs)
    except Exception as exc:
        raise UserError(f"inputs function {spec} raised {describe_exception(exc)}") from exc
    if (
        not isinstance(value, Sequence)
        or len(value) != 2
        or not isinstance(value[0], Sequence)
        or not isinstance(value[1], Mapping)
    ):
        raise UserError(
            f"inputs function {spec} returned {type(value).__name__}: it must return (args, kwargs), "
            "e.g. return (x,), {}"
        )
    return Inputs(tuple(value[0]), dict(value[1]))


def resolve_inputs(spec: str | None, target: Target) -> Inputs:
    """The inputs for one call: from the `--inputs` function, or none at all."""
    if spec is None:
        return Inputs()
    if ":" in spec:
        module_part, attribute = split_spec(spec, "--inputs")
        module, _ = load_module(module_part, "--inputs")
    else:  # a bare name is looked up beside the target
        module, attribute = target.module, spec
    function = lookup(module, attribute, spec, "--inputs")
    if accepts_scale(function):
        inputs = call_inputs(function, spec, scale=1)
        inputs.factory = function
    else:
        inputs = call_inputs(function, spec)
    inputs.spec = spec
    return inputs
