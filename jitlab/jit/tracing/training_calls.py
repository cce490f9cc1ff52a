"""The parts of a training step the tracer handles specially.

- torch.optim's methods wrapped by TorchDynamo's opt-outs (`Optimizer.zero_grad`, and once
  TorchDynamo ran in the process every `_init_group`): the wrapper would run the method natively as
  a function marked for eager execution; the method itself is interpreted.
- `zero_grad(set_to_none=True)` of optimizers and modules, as versions without their test of each
  gradient (`optimizer_method`).
- An optimizer's lazily made state (`prepare_optimizer_state`).
- `torch.compiler.is_compiling()` asked by torch.optim (`compiling_answer`).
"""

from __future__ import annotations

import contextlib
import functools
import types
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from jitlab.jit.graph.autograd_functions import FunctionTracer


class PausingRecorder(Protocol):
    """What running library code natively, unrecorded, uses of the graph recorder: its pause (here an
    optimizer's `_init_group`; the replayed warnings, once-only logging and `print` of
    warning_effects.py, logging_effects.py and builtin_calls.py too). tests/jit/test_jit_owned_state.py
    checks that the real recorder has it."""

    def pause(self) -> contextlib.AbstractContextManager[None]: ...


@functools.cache
def _disable_dynamo_wrapper_code() -> types.CodeType:
    import torch

    return torch._disable_dynamo(lambda: None).__code__


# `Optimizer.zero_grad(set_to_none=True)` without its test of each gradient: `p.grad = None` on a
# parameter without one changes nothing, and the test would be guarded (`p.grad is None`), so a
# step starting with `opt.zero_grad()` (no gradients on the first call, gradients on the next)
# would be captured twice. Compiled from a string, it is interpreted like the method it stands for.
_ZERO_GRAD_TO_NONE = """
def zero_grad(self, set_to_none=True):
    if not hasattr(self, "_zero_grad_profile_name"):
        self._patch_step_function()
    with torch.autograd.profiler.record_function(self._zero_grad_profile_name):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None
"""


# `nn.Module.zero_grad(set_to_none=True)` likewise (its warning for DataParallel replicas kept)
_MODULE_ZERO_GRAD_TO_NONE = """
def zero_grad(self, set_to_none=True):
    if getattr(self, "_is_replica", False):
        warnings.warn(
            "Calling .zero_grad() from a module created with nn.DataParallel() has no effect. "
            "The parameters are copied (in a differentiable manner) from the original module. "
            "This means they are not leaf nodes in autograd and so don't accumulate gradients. "
            "If you need gradients in your forward method, consider using autograd.grad instead.",
            stacklevel=2,
        )
    for p in self.parameters():
        p.grad = None
"""


@functools.cache
def _to_none(which: str) -> types.FunctionType:
    import warnings

    import torch

    source = _ZERO_GRAD_TO_NONE if which == "Optimizer" else _MODULE_ZERO_GRAD_TO_NONE
    namespace: dict[str, Any] = {"torch": torch, "warnings": warnings}
    exec(compile(source, f"<jitlab: {which}.zero_grad(set_to_none=True)>", "exec"), namespace)  # noqa: S102
    return namespace["zero_grad"]


def _sets_to_none(args: tuple, kwargs: dict) -> bool:
    """Whether `zero_grad(*args[1:], **kwargs)` sets the gradients to None (its default)."""
    to_none = kwargs.get("set_to_none", args[1] if len(args) > 1 else True)
    return to_none is True and len(args) <= 2 and set(kwargs) <= {"set_to_none"}


def optimizer_method(fn: types.FunctionType, args: tuple, kwargs: dict) -> Any:
    """What the interpreter calls instead of the function `fn`, or None: the method inside
    TorchDynamo's opt-outs (`unwrapped_optimizer_method`), and `Optimizer.zero_grad` and
    `nn.Module.zero_grad` with `set_to_none` as the versions above."""
    import torch

    if fn is torch.nn.Module.zero_grad and _sets_to_none(args, kwargs):
        return _to_none("Module")
    wrapped = unwrapped_optimizer_method(fn)
    if wrapped is not None and wrapped is getattr(torch.optim.Optimizer.zero_grad, "__wrapped__", None):
        if _sets_to_none(args, kwargs):
            return _to_none("Optimizer")
    return wrapped


def unwrapped_optimizer_method(fn: object) -> Any:
    """The function `fn` wraps when `fn` is TorchDynamo's opt-out around a function of torch.optim
    (not the user's), else None: torch's `_disable_dynamo` wrapper (`zero_grad`), or the
    `torch._dynamo.disable` that TorchDynamo puts on every optimizer's `_init_group` and fused step
    once it is used in the process."""
    if type(fn) is not types.FunctionType:
        return None
    if fn.__code__ is _disable_dynamo_wrapper_code():
        wrapped = getattr(fn, "__wrapped__", None)
    elif getattr(fn, "_torchdynamo_disable", False) is True:
        wrapped = getattr(fn, "_torchdynamo_orig_callable", None)
    else:
        return None
    module = getattr(wrapped, "__module__", "") or ""
    if type(wrapped) is types.FunctionType and module.startswith("torch.optim"):
        return wrapped
    return None


def prepare_optimizer_state(
    recorder: PausingRecorder, fn: types.MethodType, args: tuple, kwargs: dict
) -> None:
    """When `fn` is `opt._init_group(group, params, grads, ...)` about to be interpreted: run it natively first,
    with fresh lists, unrecorded, so that the state it creates lazily on the first step (Adam's
    `exp_avg`, `exp_avg_sq` and `step`) exists before the interpreted run reads it, as TorchDynamo
    does for `torch.compile(opt.step)`. The interpreted run then reads that state as the graph's
    inputs, so the first call's capture serves the next steps; the state made is the one eager code
    makes on that call (the same tensors, made the same way)."""
    import torch

    if fn.__name__ != "_init_group" or not isinstance(getattr(fn, "__self__", None), torch.optim.Optimizer):
        return
    func = getattr(fn.__func__, "_torchdynamo_orig_callable", fn.__func__)  # TorchDynamo's opt-out
    if not (getattr(func, "__module__", "") or "").startswith("torch.optim"):
        return  # a user's optimizer: its _init_group may do more than make state, and runs once
    fresh_args = tuple([] if type(a) is list else a for a in args)
    fresh_kwargs = {k: [] if type(v) is list else v for k, v in kwargs.items()}
    with recorder.pause():
        fn(*fresh_args, **fresh_kwargs)


def compiling_answer(tracer: FunctionTracer) -> bool:
    """What `torch.compiler.is_compiling()` answers to the code being captured: True (the path
    libraries keep for graph compilers), except to torch.optim's code with the eager backend. There
    the answer is eager code's, False: the optimizer reads its step counts with `.item()` and
    computes its bias corrections and step sizes on Python floats, which the eager backend's graph
    keeps as Python arithmetic, so the updates are bitwise eager's. A compiling backend gets
    TorchDynamo's path (the step counts stay tensors, the corrections tensor arithmetic)."""
    frames = getattr(tracer.interpreter, "frames", None)
    if not frames or not tracer.recorder.lazy:
        return True
    module = frames[-1].globals.get("__name__", "") or ""
    return not module.startswith("torch.optim")
