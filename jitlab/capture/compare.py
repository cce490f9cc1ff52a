"""Comparing what a captured program produced with what eager execution produced.

Outputs are compared structurally (tuples, lists, dicts, dataclasses, named tuples, plain objects)
with tensors compared by type, shape, dtype and value (`torch.allclose` for floating point, exact
for the rest). Visible state is a flat mapping from dotted paths to values, taken from the model
after the calls: parameters and buffers, plain public attributes of every submodule (counters,
caches, flags), and whatever the case's `observe` returns.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

import torch

RTOL = 1e-5
ATOL = 1e-6
MISSING = "<missing>"
_PLAIN = (int, float, bool, str, type(None), torch.Tensor)


def difference(
    expected: Any, actual: Any, path: str = "output", *, rtol: float = RTOL, atol: float = ATOL
) -> str | None:
    """None when `actual` equals `expected`, else a one-line description of the first difference.
    Floating-point values are compared with `rtol` and `atol` (0 and 0: exactly, NaN equal to NaN)."""
    if (
        isinstance(actual, str)
        and actual == MISSING
        and not (isinstance(expected, str) and expected == MISSING)
    ):
        return f"{path}: not kept by the captured program"
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return f"{path}: expected a tensor, got {type(actual).__name__}"
        if expected.shape != actual.shape:
            return f"{path}: shape {tuple(actual.shape)} instead of {tuple(expected.shape)}"
        if expected.dtype != actual.dtype:
            return f"{path}: dtype {actual.dtype} instead of {expected.dtype}"
        e, a = expected.detach().cpu(), actual.detach().cpu()
        if e.is_floating_point() or e.is_complex():
            same = torch.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        else:
            same = torch.equal(a, e)
        if not same:
            if e.numel() and (e.is_floating_point() or e.is_complex()):
                worst = (a - e).abs().max().item()
                return f"{path}: values differ (max abs difference {worst:.3g})"
            return f"{path}: values differ"
        return None
    if isinstance(expected, float) and isinstance(actual, float):
        if math.isclose(expected, actual, rel_tol=rtol, abs_tol=atol) or (
            math.isnan(expected) and math.isnan(actual)
        ):
            return None
        return f"{path}: {actual!r} instead of {expected!r}"
    if _same_definition(expected) is not None:
        if _same_definition(expected) == _same_definition(actual):
            return None
        return f"{path}: {actual!r} instead of {expected!r}"
    if _is_namedtuple(expected) and _is_namedtuple(actual):
        # TorchScript returns its own NamedTuple class of the same name and fields: same for a user
        if type(expected).__name__ != type(actual).__name__ or expected._fields != actual._fields:
            return f"{path}: {_describe(actual)} instead of {_describe(expected)}"
        return difference(tuple(expected), tuple(actual), path, rtol=rtol, atol=atol)
    if type(expected) is not type(actual) and _same_definition(type(expected)) != _same_definition(
        type(actual)
    ):
        # a traced program turns Python scalars into 0-d tensors; that is a different output (two
        # loads of one file define two classes of one qualified name: the same definition)
        return f"{path}: {_describe(actual)} instead of {_describe(expected)}"
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(actual):
            return f"{path}: length {len(actual)} instead of {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = difference(e, a, f"{path}[{i}]", rtol=rtol, atol=atol)
            if found:
                return found
        return None
    if isinstance(expected, dict):
        if [_key_token(k) for k in expected] != [_key_token(k) for k in actual]:
            return f"{path}: keys {list(actual)} instead of {list(expected)}"
        for (key, e), a in zip(expected.items(), actual.values()):
            found = difference(e, a, f"{path}[{key!r}]", rtol=rtol, atol=atol)
            if found:
                return found
        return None
    if dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        for f in dataclasses.fields(expected):
            found = difference(
                getattr(expected, f.name), getattr(actual, f.name), f"{path}.{f.name}", rtol=rtol, atol=atol
            )
            if found:
                return found
        return None
    if isinstance(expected, _PLAIN):
        return None if expected == actual else f"{path}: {actual!r} instead of {expected!r}"
    if hasattr(expected, "__dict__"):
        return difference(vars(expected), vars(actual), path, rtol=rtol, atol=atol)
    return None if expected == actual else f"{path}: {actual!r} instead of {expected!r}"


def _same_definition(value: Any) -> tuple[str, ...] | None:
    """What names an `Enum` member or a class wherever its file was loaded: the fuzzer runs a
    program's eager and jitted calls from two loads of its file, as two modules of other names
    (`jitlab_fuzz_program_0`, `_1`), whose `class Mode(Enum)` are two classes with two sets of
    members; so the qualified name counts, not the module. None for other values."""
    if isinstance(value, enum.Enum):
        return ("enum", type(value).__qualname__, value.name)
    if isinstance(value, type):
        return ("class", value.__qualname__)
    return None


def _key_token(key: Any) -> Any:
    """A dict key as compared between two runs (`_same_definition`, or the key itself)."""
    named = _same_definition(key)
    return key if named is None else named


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _describe(value: Any) -> str:
    kind = type(value)
    if _is_namedtuple(value):
        return f"namedtuple {kind.__name__}{tuple(kind._fields)}"
    return kind.__name__


def _plain_value(value: Any) -> bool:
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and _plain_value(v) for k, v in value.items())
    return False


def state_paths(model: Any) -> list[str]:
    """Dotted paths of the visible state of an eager model (found once, then read on every model)."""
    if not isinstance(model, torch.nn.Module):
        return []
    paths = list(model.state_dict(keep_vars=True))
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if name.startswith("_") or name == "training" or not _plain_value(value):
                continue
            paths.append(f"{prefix}.{name}" if prefix else name)
    return paths


def read_state(owner: Any, paths: list[str]) -> dict[str, Any]:
    """The values at `paths` on `owner` (copied, so later calls cannot change them)."""
    state: dict[str, Any] = {}
    for path in paths:
        value: Any = owner
        try:
            for part in path.split("."):
                value = getattr(value, part)
        except AttributeError:
            value = MISSING
        state[path] = snapshot(value)
    return state


def snapshot(value: Any) -> Any:
    """A copy of plain containers and tensors, so later calls cannot change the recorded value."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(v) for v in value) if type(value) in (list, tuple) else value
    if isinstance(value, dict):
        return {k: snapshot(v) for k, v in value.items()}
    return value


def copy_inputs(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A deep copy of call inputs, to see in-place changes the program made to them."""
    return snapshot(args), snapshot(kwargs)
