"""The fused optimizer kernels (`torch.optim.AdamW(..., fused=True)` and the like): one native kernel
that updates every parameter and its optimizer state in place, and returns nothing.

No compiler takes them: AOTAutograd cannot functionalize them ("mutating a non-functional tensor with
a functional tensor"), TorchDynamo does not trace them (torch.optim wraps them in
`torch.compiler.disable`), and some have no fake kernel (`_fused_adagrad_`). So a graph that holds one
runs it on the host between its compiled parts, as the kernel eager code calls, in program order
(frontend/host_split.py), and the run on fake tensors passes over it: it changes no size, dtype or
layout (graph/fake_run.py)."""

from __future__ import annotations

import torch

#: the kernels this torch has
FUSED_OPTIMIZER_KERNELS = tuple(
    getattr(torch, name)
    for name in ("_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_fused_adagrad_")
    if hasattr(torch, name)
)


def is_fused_optimizer_kernel(target: object) -> bool:
    """Whether `target`, an fx node's target, is one of the fused optimizer kernels."""
    return any(target is kernel for kernel in FUSED_OPTIMIZER_KERNELS)
