"""Whether a program's results hang on rounding: eager code run again with every rounded result of a
tensor operation off by about one rounding step.

A compiling backend computes the same values in another order (fused kernels, decomposed optimizer
updates with tensor operands), so its results differ from eager's by rounding. Most programs keep
such a difference small, and the oracle's tolerance accepts it. Some amplify it without bound: Adam
divides a gradient by its own root mean square, so a gradient that is exactly zero in eager code (a
centred batch of two rows, a zero bias) and 1e-9 in the compiled one moves the parameter by a good
fraction of the learning rate (fuzz seed 105, programs 414 and 1561). A difference there proves
nothing about the JIT. The oracle calls a program "unstable" when eager code itself, with rounding
noise added, differs from the reference beyond the tolerance the JIT is held to.

The noise: each floating-point result of an operation that rounds is multiplied by 1 + u * eps with
u uniform in [-2, 2] and eps its dtype's machine epsilon (so about half the results move by one
rounding step), drawn from a generator of its own (the program's draws are unchanged), and only on
values that look rounded: those whose lower half of the mantissa is not all zero. A short value (a
whole number, -0.5, 1.25) is what exact arithmetic on short values gives in any order: a global
`linspace(-1, 1, 3)` summed to decide a branch, or `relu(h) - 0.5` giving ties of -0.5 that `argmax`
breaks, must not move. Operations that compute their results exactly (copies, indexing,
comparisons, max, relu, views) are left alone, so a program comparing such results exactly is not
made unstable by the probe.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

#: aten operations whose floating-point results are exact (no rounding a compiler could change)
_EXACT = frozenset(
    """
    abs alias argmax argmin as_strided cat clamp clamp_max clamp_min clone constant_pad_nd copy
    detach diag_embed embedding empty empty_like empty_strided expand eye fill flip full full_like
    gather hardtanh index index_put index_select lift_fresh lift_fresh_copy masked_fill
    masked_scatter masked_select max max_pool2d_with_indices maximum min minimum narrow neg new_empty
    new_empty_strided new_full new_ones new_zeros ones ones_like permute relu repeat roll scalar_tensor
    scatter select sign slice sort split stack t threshold topk transpose tril triu unbind unfold
    unsqueeze squeeze view where zero zeros zeros_like _to_copy _unsafe_view reflection_pad1d
    reflection_pad2d replication_pad1d replication_pad2d floor ceil round trunc rand randn randint
    bernoulli normal uniform randperm native_dropout
    """.split()
)


#: each floating-point type's integer type of the same width and its mantissa's width in bits
_LAYOUT = {
    torch.float64: (torch.int64, 52),
    torch.float32: (torch.int32, 23),
    torch.float16: (torch.int16, 10),
    torch.bfloat16: (torch.int16, 7),
}


def _rounded(tensor: torch.Tensor) -> torch.Tensor:
    """Where the lower half of each element's mantissa is not all zero (a rounded value, mostly)."""
    integer, mantissa = _LAYOUT[tensor.dtype]
    bits = tensor.contiguous().view(integer)
    return (bits & ((1 << (mantissa // 2)) - 1)) != 0


def _name(func: Any) -> str:
    return func._schema.name.split("::")[-1].rstrip("_")


class RoundingNoise(TorchDispatchMode):
    """While active, every rounded floating-point result of a tensor operation is off by up to two
    machine epsilons, relative (see the module's docstring)."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.generator = torch.Generator().manual_seed(seed)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if _name(func) in _EXACT:
            return out
        schema = func._schema
        written = [
            value
            for argument, value in zip(schema.arguments, args)
            if argument.alias_info is not None and argument.alias_info.is_write
        ]
        written += [kwargs[a.name] for a in schema.arguments if a.kwarg_only and a.name in kwargs
                    and a.alias_info is not None and a.alias_info.is_write]  # fmt: skip
        if written:
            targets = tree_leaves(written)
        elif any(r.alias_info is not None for r in schema.returns):
            return out  # a view of an input: its values are the input's
        else:
            targets = tree_leaves(out)
        for tensor in targets:
            self._perturb(tensor)
        return out

    def _perturb(self, tensor: object) -> None:
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point() or tensor.numel() == 0:
            return
        if tensor.dtype not in _LAYOUT or tensor.layout != torch.strided or tensor.device.type != "cpu":
            return
        if 0 in tensor.stride():
            return  # memory shared by several elements: a change of one would change the others
        eps = torch.finfo(tensor.dtype).eps
        u = torch.rand(tensor.shape, generator=self.generator, dtype=torch.float64) * 4 - 2
        with torch.no_grad():
            tensor.copy_(torch.where(_rounded(tensor), tensor.double() * (1 + u * eps), tensor.double()))
