"""What TorchDynamo changes in torch for good once torch.compile has run, seen through.

Dynamo replaces `nn.Module.__init__` with its own `patched_init` (torch/_dynamo/mutation_guard.py):
the original `__init__`, then a tag recording which compile generation built the module. For
jitlab.jit that wrapper is torch internals run natively, so a module built during a captured call
(`nn.Softmax(dim=-1)(x)`, the new ModuleList that slicing one returns) had its `_modules` and hook
dicts made by native code, of unknown origin to the tracer, and the call fell back to eager. The
interpreter steps into the original `__init__` instead, as it does when Dynamo has not run. The tag
is skipped: it only tells a later torch.compile that the module was built at run time, and a module
without it is treated as one built before compiling, which Dynamo guards like any other.
"""

from __future__ import annotations

import types

_PATCH_MODULE = "torch._dynamo.mutation_guard"


def unpatched_module_init(fn: types.FunctionType) -> types.FunctionType | None:
    """The original `nn.Module.__init__` when `fn` is Dynamo's patched one, else None."""
    if fn.__name__ != "patched_init" or fn.__module__ != _PATCH_MODULE or not fn.__closure__:
        return None
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__, strict=True))
    init = cells.get("init")
    original = init.cell_contents if init is not None else None
    return original if type(original) is types.FunctionType else None
