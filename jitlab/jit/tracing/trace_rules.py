"""Trace rules: which Python functions the interpreter steps into while it captures a call, and which
run natively, each with its reason. This is the one place that decides; `jitlab.jit.explain_rule(fn)`
prints the rule that applies to a function.

A function that is interpreted is watched: what it reads from outside is guarded, what it changes
is replayed, and the containers and objects it builds belong to the call. A function that runs
natively is a black box: its result is of unknown origin unless the tracer models the function
(torch operators become graph nodes; lookasides and known constructors are modelled).

Interpreted:
- user code: a source file outside the standard library, site-packages, torch and jitlab;
- functions made while the call runs (a lambda, a nested function, a comprehension on 3.11), wherever
  their file is: they are part of the code that made them, which was interpreted;
- methods named `forward`, wherever they are defined (a library's modules, and the decorators
  that wrap a forward with `functools.wraps`);
- the wrapper torch's context managers make as decorators (`@torch.no_grad()`, `@torch.autocast(...)`),
  so that the function it wraps is interpreted too;
- code compiled from strings (`exec`, the `__init__` that `dataclasses` writes) or typed at a prompt
  (`<stdin>`, IPython's cells);
- torch's module-call protocol and its hooks, weight norm, spectral norm and parametrizations
  (module_hooks.py says why);
- torch.distributions' transforms: `Transform.__call__` calls the user's `_call` back;
- the model libraries transformers, timm and torchvision: their models decide in Python on
  configs, build caches and output objects, and wrap forwards in decorators.
- torch.optim's optimizers and `torch.nn.utils.clip_grad` (the parts of a training step, see
  training_calls.py);
- contextlib: a user's `@contextmanager` generator runs inside its `__enter__` and `__exit__`;
- `typing.cast` and `typing.assert_type`, which return their argument: run natively, a module passed
  through one would be a call back into user code.

A function's module is the one its code lives in (its globals' `__name__`), not its `__module__`:
`functools.wraps` copies the wrapped function's onto the wrapper (contextlib's helper claims the
user's module).

Native, with the reason `rule_for` gives:
- C functions (no bytecode to interpret);
- torch.optim's learning-rate schedulers, which run at a graph break (break_tracer.py);
- the `__iter__` of torch's module containers (ModuleList, Sequential, ModuleDict), and the
  `__getitem__` of ModuleList and Sequential (`self.layers[i]`, `self.layers[:n]`), which the tracer
  models: their keys are guarded and each submodule is read as it is used (stepping into them would
  read `_modules.values()`, and so guard the whole module tree on every call); likewise a module's
  `named_children` (which `children` calls: `for block in self.children()`, timm's RegNet stages)
  and a ModuleDict's `items`, `values` and `keys` (torchvision's and timm's DenseNet blocks);
- the rest of torch (its operators are recorded as graph nodes; its Python internals manage state
  the graph must not replay);
- the standard library, numpy and other installed packages: modelled where it matters (lookasides,
  known constructors, copies), and otherwise a black box whose results are of unknown origin.
Globals of the model libraries are guarded like a user module's (`guards_globals`); those of other
library modules are taken as constants (module_hooks.MUTABLE_LIBRARY_GLOBALS lists the exceptions).
"""

from __future__ import annotations

import functools
import os
import sys
import types
from dataclasses import dataclass
from typing import Any

from jitlab.jit.guards.kinds import CHILDREN_VIEWS, LIBRARY_MODULE_ROOTS, MODULE_CONTAINERS, MODULE_SEQUENCES
from jitlab.jit.interpreter import unsupported_reason
from jitlab.jit.interpreter.hooks import is_user_code, library_prefixes

#: library modules the interpreter steps into, like user code, and why (the first prefix that matches)
INTERPRETED_LIBRARIES: tuple[tuple[str, str], ...] = (
    ("torch.nn.modules", "torch's module-call protocol: hooks and forwards are guarded and replayed"),
    ("torch.nn.utils.parametrize", "parametrizations: the graph computes the parametrized weight"),
    ("torch.nn.utils.parametrizations", "parametrizations: the graph computes the parametrized weight"),
    ("torch.nn.utils.weight_norm", "weight norm's pre-hook: the graph computes the normalised weight"),
    ("torch.nn.utils.spectral_norm", "spectral norm's pre-hook: the graph computes the normalised weight"),
    (
        "torch.distributions.transforms",
        "transforms: Transform.__call__ calls the user's _call back, and its cache is Python state",
    ),
    (
        "contextlib",
        "@contextmanager: the user's generator runs inside its __enter__ and __exit__",
    ),
    (
        "torch.optim",
        "optimizers and schedulers: hyperparameters and state are guarded, updates are graph operations",
    ),
    ("torch.nn.utils.clip_grad", "gradient clipping: the norms and the scaling are graph operations"),
    ("transformers", "a model library: configs, caches and output objects are Python the graph depends on"),
    ("timm", "a model library: its models' Python decides the graph"),
    ("torchvision", "a model library: its models' Python decides the graph"),
)


#: interpreted libraries whose module globals are guarded and whose writes to them are replayed,
#: like a user module's: their code keeps state in module-level objects (transformers' output
#: collector is one, written on every call under a compiler); torch's are taken as constants
GUARDED_GLOBALS_LIBRARIES = ("transformers", "timm", "torchvision")


def guards_globals(globals_: dict[str, Any]) -> bool:
    """Whether reads of the module globals `globals_` are guarded (and writes replayed): a user
    module's (and a namespace without a file: exec, the REPL), and the model libraries'; the
    standard library's, torch's and other installed packages' are taken as constants."""
    file = globals_.get("__file__")
    if not file:
        return True
    name = globals_.get("__name__", "")
    root = name.split(".", 1)[0]
    if root in GUARDED_GLOBALS_LIBRARIES:
        return True
    if root in LIBRARY_MODULE_ROOTS or root in sys.stdlib_module_names:
        return False
    return not os.path.realpath(file).startswith(library_prefixes())


@dataclass(frozen=True)
class Rule:
    """Whether a function is interpreted during capture, and why."""

    interpret: bool
    reason: str

    def __str__(self) -> str:
        return f"{'interpreted' if self.interpret else 'native'}: {self.reason}"


# fixed texts: the rule is asked for every call met while capturing, so nothing is formatted there;
# explain_rule adds the function's file or module
_USER_CODE = Rule(True, "user code")
_FROM_A_STRING = Rule(True, "code compiled from a string or typed at a prompt (exec, dataclasses' __init__)")
_BLACK_BOX = Rule(False, "installed or standard-library code: run as a black box")


_CONTEXT_DECORATOR = Rule(
    True,
    "torch's decorator form of a context manager (@torch.no_grad()): its with block is interpreted, "
    "so the function it wraps is too",
)


@functools.cache
def _context_decorator_code() -> types.CodeType:
    """The code of the wrapper torch's context managers make when used as decorators
    (`@torch.no_grad()`, `@torch.enable_grad()`, `@torch.inference_mode()`): `with ctx(): return
    func(...)`, one nested function of torch.utils._contextlib (functools.wraps gives each wrapper
    the name and module of the function it wraps, so only its code tells it apart)."""
    import torch

    return torch.no_grad()(lambda: None).__code__


@functools.cache
def _autocast_decorator_code() -> types.CodeType:
    """The code of the wrapper `@torch.autocast(...)` makes of the function it decorates: `with
    autocast_instance: return func(...)` (torch.amp.autocast_mode), interpreted like the one above so
    that the region is recorded (graph/autocast_nodes.py) and the function it wraps is interpreted."""
    import torch

    return torch.autocast("cpu", enabled=False)(lambda: None).__code__


_MODELLED_ITERATION = Rule(
    False,
    "iteration over torch's module containers, modelled by the tracer: their keys are guarded and "
    "each submodule is read as it is used, not the whole module tree",
)


_MODELLED_INDEXING = Rule(
    False,
    "indexing and slicing torch's module lists and sequentials, modelled by the tracer: their keys "
    "are guarded and each submodule taken is read as it is used, not the whole module tree",
)


_MODELLED_CHILDREN = Rule(
    False,
    "a module's direct submodules (`named_children`, which `children` calls; a ModuleDict's `items`, "
    "`values` and `keys`), modelled by the tracer: the names are guarded and each submodule is read "
    "as it is used, not the whole module tree",
)


_SCHEDULERS = "torch.optim.lr_scheduler"
_SCHEDULER = Rule(
    False,
    "learning-rate schedulers: their step decides in Python on a step count that changes on every "
    "call, so it runs natively at a graph break (the learning rates it sets are read after it)",
)


_STEP_WRAPPER = Rule(
    True, "the wrapper a learning-rate scheduler puts around opt.step: it calls the optimizer's step"
)


_IDENTITY = Rule(
    True,
    "returns its argument (typing.cast, typing.assert_type): interpreted so that the value keeps "
    "its origin; run natively, a module passed through it would be a callback into user code",
)


@functools.cache
def _modelled_functions() -> dict[types.FunctionType, Rule]:
    """Library functions whose rule is not their module's: inside interpreted libraries, those the
    tracer models more precisely than interpreting them would guard them; in the standard library,
    the identities that type checkers use, which are interpreted."""
    import typing

    rules = {base.__iter__: _MODELLED_ITERATION for base in MODULE_CONTAINERS}
    rules.update({base.__getitem__: _MODELLED_INDEXING for base in MODULE_SEQUENCES})
    rules.update({fn: _MODELLED_CHILDREN for fn in CHILDREN_VIEWS})
    rules.update({typing.cast: _IDENTITY, typing.assert_type: _IDENTITY})
    return rules


def library_reason(module: str) -> str | None:
    """Why functions of `module` are interpreted, or None when the module is not an interpreted library."""
    for prefix, reason in INTERPRETED_LIBRARIES:
        if module == prefix or module.startswith(prefix + "."):
            return reason
    return None


def code_module(func: types.FunctionType) -> str:
    """The module `func`'s code lives in: its globals' `__name__`. Not `__module__`, which
    `functools.wraps` copies from the wrapped function (contextlib's helper claims the user's)."""
    return func.__globals__.get("__name__") or func.__module__ or ""


def rule_for(func: types.FunctionType, made_in_call: bool = False) -> Rule:
    """The trace rule of the Python function `func`; `made_in_call`: interpreted code made it."""
    code = func.__code__
    if is_user_code(code):
        return _USER_CODE
    if code.co_filename.startswith("<") and not code.co_filename.startswith("<frozen"):
        return _FROM_A_STRING  # run natively, its reads of globals would not be guarded
    if func.__name__ == "forward":
        return Rule(True, "a forward method (or a decorator wrapping one), wherever it is defined")
    if code is _context_decorator_code() or code is _autocast_decorator_code():
        return _CONTEXT_DECORATOR
    modelled = _modelled_functions().get(func)
    if modelled is not None:
        return modelled
    if made_in_call and unsupported_reason(code) is None:
        return Rule(
            True, "made by interpreted code during the call (a lambda, nested function or comprehension)"
        )
    module = code_module(func)
    if module.startswith(_SCHEDULERS):
        # the wrapper a scheduler puts around `opt.step` (to note that it was called) is interpreted:
        # it calls the optimizer's step, which is
        return _STEP_WRAPPER if code.co_qualname.endswith(".wrap_step.<locals>.wrapper") else _SCHEDULER
    reason = library_reason(module)
    if reason is not None:
        return Rule(True, reason)
    root = module.split(".", 1)[0]
    if root == "torch":
        return Rule(
            False, "torch's internals: operators are recorded as graph nodes, the rest is torch's state"
        )
    if root == "jitlab":
        return Rule(False, "jitlab's own code")
    return _BLACK_BOX


def explain_rule(fn: object) -> str:
    """The trace rule for `fn` as one line: a function, a bound method, a module (its forward), a class
    (its `__init__`) or a C function."""
    import torch.nn as nn

    target = fn
    if isinstance(target, nn.Module):
        target = type(target).forward
    elif isinstance(target, type):
        init = target.__init__
        if type(init) is not types.FunctionType:
            return f"native: {target.__qualname__} is built by C code (no Python __init__)"
        target = init
    if isinstance(target, types.MethodType):
        target = target.__func__
    if type(target) is not types.FunctionType:
        return f"native: {getattr(fn, '__qualname__', type(fn).__name__)} is a C function (no bytecode)"
    rule = rule_for(target)
    problem = unsupported_reason(target.__code__) if rule.interpret else None
    if problem is not None:
        return f"native: {problem} (its rule: {rule.reason})"
    if rule is _BLACK_BOX:
        return f"{rule} ({target.__module__ or target.__code__.co_filename})"
    if rule in (_USER_CODE, _FROM_A_STRING):
        return f"{rule} ({target.__code__.co_filename})"
    return str(rule)
