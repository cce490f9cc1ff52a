"""Module calls with hooks, weight norm and parametrizations.

A module without hooks is called by interpreting its `forward` directly (one cheap guard says it
still has no hooks). A module with forward pre-hooks or forward hooks (`register_forward_pre_hook`,
`register_forward_hook`, with `with_kwargs` or `always_call`, the old `torch.nn.utils.weight_norm`
and `spectral_norm`, which are pre-hooks) is called through torch's own `Module._call_impl`, which
the interpreter runs like user code: the hook dicts it reads are guarded (identity of the dicts,
their keys, the hook objects), the hooks themselves are interpreted (a Python hook is user code; the
weight-norm and spectral-norm hook objects of `torch.nn.utils` are interpreted too), and what they
do (e.g. `setattr(module, "weight", w)`) is recorded and replayed like any other effect.

Parametrizations (`torch.nn.utils.parametrize`, `parametrizations.weight_norm`, `spectral_norm`,
`orthogonal`) put a property on the module's class: its getter and the parametrization modules are
interpreted, so the graph computes the parametrized weight from the original tensors on every call,
as eager code does, and nothing of it is evaluated by the guards.

Backward hooks are attached to the autograd graph of each call by torch's Python code
(`BackwardHook`); a graph replayed without that Python would skip them, so a module with backward
hooks is not captured (the reason says so).
"""

from __future__ import annotations

from typing import Any

import torch.nn as nn

#: globals of interpreted library modules that programs change at run time: guarded like user globals
#: (`with parametrize.cached():` switches the parametrization cache on and off)
MUTABLE_LIBRARY_GLOBALS = frozenset({("torch.nn.utils.parametrize", "_cache_enabled")})


def has_forward_hooks(module: nn.Module) -> bool:
    return bool(module._forward_hooks or module._forward_pre_hooks)


def has_backward_hooks(module: nn.Module) -> bool:
    return bool(module._backward_hooks or module._backward_pre_hooks)


def hooked_call(module: nn.Module, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict]:
    """The call to interpret for a module with forward hooks: torch's `_call_impl` itself, so that the
    hooks run in torch's order with torch's handling of their results."""
    return nn.Module._call_impl, (module, *args), kwargs
