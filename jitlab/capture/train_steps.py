"""The training steps of `jitlab capture --zoo --train`, written as users write them.

`step` is the step of issue 45, for models that compute their own loss from labels; `logits_step`
puts a cross-entropy on the logits of a timm or torchvision model; `output_step` is for the
transformers models without a head (a mean square of their first output). `AMP_STEPS` are the same
steps in mixed precision (`--amp`). Each is the function
the arrangements wrap (`jitlab.jit(step)`, `torch.compile(step)`) or call with a wrapped model, so
they live in a file of their own: jitlab.jit and TorchDynamo read their source and bytecode.

`OptimizerWithCompiledStep` is the optimizer of the arrangement PyTorch recommends for training
(`torch.compile(model)` plus `torch.compile(opt.step)`): the same steps call `opt.step()` and
`opt.zero_grad()`, and its `step` is the compiled one.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F


def step(model: Any, opt: Any, batch: dict[str, Any]) -> torch.Tensor:
    loss = model(**batch).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def logits_step(model: Any, opt: Any, batch: dict[str, Any]) -> torch.Tensor:
    loss = F.cross_entropy(model(batch["images"]), batch["labels"])
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def output_step(model: Any, opt: Any, batch: dict[str, Any]) -> torch.Tensor:
    loss = model(**batch)[0].pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


#: loss kind (`workloads.loss_kind`) -> its step
STEPS = {"loss": step, "logits": logits_step, "output": output_step}


# Mixed precision as PyTorch's AMP recipe writes it: the forward and the loss under autocast on the
# device the batch is on, the backward pass and the optimizer outside. bfloat16 needs no gradient
# scaler (float16 would: `torch.amp.GradScaler`, which decides on the gradients' values).
def amp_step(model: Any, opt: Any, batch: dict[str, Any]) -> torch.Tensor:
    with torch.autocast(next(iter(batch.values())).device.type, dtype=torch.bfloat16):
        loss = model(**batch).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def amp_logits_step(model: Any, opt: Any, batch: dict[str, Any]) -> torch.Tensor:
    with torch.autocast(batch["images"].device.type, dtype=torch.bfloat16):
        loss = F.cross_entropy(model(batch["images"]), batch["labels"])
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def amp_output_step(model: Any, opt: Any, batch: dict[str, Any]) -> torch.Tensor:
    with torch.autocast(next(iter(batch.values())).device.type, dtype=torch.bfloat16):
        loss = model(**batch)[0].float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


#: loss kind -> its mixed-precision step (`jitlab capture --zoo --train --amp`)
AMP_STEPS = {"loss": amp_step, "logits": amp_logits_step, "output": amp_output_step}

#: --optimizer name -> (class, keyword arguments): SGD with momentum, Adam and AdamW, common settings
OPTIMIZERS: dict[str, tuple[str, dict[str, Any]]] = {
    "sgd": ("SGD", {"lr": 0.01, "momentum": 0.9}),
    "adam": ("Adam", {"lr": 1e-3}),
    "adamw": ("AdamW", {"lr": 1e-3}),
}


def make_optimizer(name: str, model: torch.nn.Module) -> torch.optim.Optimizer:
    class_name, settings = OPTIMIZERS[name]
    return getattr(torch.optim, class_name)(model.parameters(), **settings)


class OptimizerWithCompiledStep:
    """`opt` with `step` replaced by `compiled_step` (`torch.compile(opt.step)`)."""

    def __init__(self, opt: torch.optim.Optimizer, compiled_step: Any) -> None:
        self.opt = opt
        self.step = compiled_step

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.opt.zero_grad(set_to_none)
