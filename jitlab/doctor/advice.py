"""The regime's suggestion, fitted to the operators that take the time.

"Bandwidth-bound: fuse element-wise operations" is right for `x.cos().cos()` and wrong for a sampler
made of `nonzero`, `randperm` and indexing, which has nothing to fuse: its bytes go to operators that
select, sort or copy data. So every counted operator is put in a family (from torch's operator tags
and the FLOP counter's registry), and the suggestion for a bandwidth or compute verdict follows the
family that moved the most bytes or did the most FLOPs.
"""

from __future__ import annotations

from typing import Any

ELEMENTWISE = "element-wise"
REDUCTION = "reduction"
CONTRACTION = "matrix product or convolution"
DATA_MOVEMENT = "selection, indexing, sorting or copying"


def family(func: Any) -> str:
    """The family of one ATen operator (an OpOverload)."""
    import torch
    from torch.utils.flop_counter import flop_registry

    if func._overloadpacket in flop_registry:
        return CONTRACTION
    if torch.Tag.pointwise in func.tags:
        return ELEMENTWISE
    if torch.Tag.reduction in func.tags:
        return REDUCTION
    return DATA_MOVEMENT


OVERHEAD = (
    "the device waits for Python and the framework: compile the function (torch.compile, or CUDA "
    "graphs on a GPU), batch many small calls into one larger one, and avoid per-element loops"
)
FUSE = (
    "memory traffic dominates, in element-wise operations and reductions ({ops}): fuse them "
    "(torch.compile fuses them into one kernel), avoid intermediate tensors, use smaller dtypes"
)
MOVE_LESS = (
    "memory traffic dominates, in operators that select, sort or copy data ({ops}), which no "
    "compiler fuses: move less data (select a fixed number with topk and gather instead of building "
    "index tensors with nonzero, keep masks as bool, avoid copies such as cat)"
)
COMPUTE = (
    "the arithmetic dominates ({ops}): the time is well spent; go faster with lower precision "
    "(float16/bfloat16, TF32 on GPUs), tensor cores, or fewer FLOPs (a better algorithm)"
)
COMPUTE_ELEMENTWISE = (
    "the arithmetic dominates, in element-wise operations ({ops}): fuse them (torch.compile), or "
    "compute fewer of them"
)


def _heaviest(by_op: dict[str, dict[str, Any]], key: str, families: set[str] | None = None) -> str:
    ranked = sorted(
        (
            (name, entry)
            for name, entry in by_op.items()
            if families is None or entry.get("family") in families
        ),
        key=lambda item: -item[1][key],
    )
    return ", ".join(f"{name} x{int(entry['calls'])}" for name, entry in ranked[:3] if entry[key] > 0)


def suggestion(verdict: str, by_op: dict[str, dict[str, Any]]) -> str:
    """What to do for `verdict`, given the counted operators `{name: {calls, flops, bytes, family}}`."""
    if verdict == "overhead":
        return OVERHEAD
    key = "bytes" if verdict == "bandwidth" else "flops"
    per_family: dict[str, float] = {}
    for entry in by_op.values():
        per_family[entry.get("family", DATA_MOVEMENT)] = (
            per_family.get(entry.get("family", DATA_MOVEMENT), 0.0) + entry[key]
        )
    top = max(per_family, key=lambda name: per_family[name]) if per_family else None
    if verdict == "bandwidth":
        if top in (ELEMENTWISE, REDUCTION):
            return FUSE.format(ops=_heaviest(by_op, key, {ELEMENTWISE, REDUCTION}))
        return MOVE_LESS.format(ops=_heaviest(by_op, key, {DATA_MOVEMENT, CONTRACTION}))
    if top == ELEMENTWISE:
        return COMPUTE_ELEMENTWISE.format(ops=_heaviest(by_op, key, {ELEMENTWISE}))
    return COMPUTE.format(ops=_heaviest(by_op, key))
