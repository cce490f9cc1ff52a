"""How many results a splitting operation gives, as an expression over the size of the dimension it
splits (graph/shapes.py keeps it as a fact instead of pinning every size of the input).

`split`, `chunk` and `unbind` (also iterating over a tensor, recorded as `unbind`) return as many
tensors as their dimension's size allows. Python code then unpacks or iterates the results, so a
cache entry is only right for sizes that give the same number. The count is recorded in the graph
with the functions below (run on symbolic sizes they give the expression) and checked as a guard
(`((B + 2) // 3 + B - 1) // ((B + 2) // 3) == 3` for `x.chunk(3)` on a batch of B). Each function
is torch's rule for a non-empty dimension; an empty one is its own fact (`size == 0`).
"""

from __future__ import annotations

from typing import Any

import torch


def split_count(n: int | torch.SymInt, size: int | torch.SymInt) -> int | torch.SymInt:
    """`len(x.split(size, d))` for `x.size(d) == n > 0`."""
    return (n + size - 1) // size


def chunk_count(n: int | torch.SymInt, chunks: int | torch.SymInt) -> int | torch.SymInt:
    """`len(x.chunk(chunks, d))` for `x.size(d) == n > 0`."""
    step = (n + chunks - 1) // chunks
    return (n + step - 1) // step


def unbind_count(n: int | torch.SymInt) -> int | torch.SymInt:
    """`len(x.unbind(d))`: the size itself."""
    return n


def _arg(args: tuple, kwargs: dict, index: int, names: tuple[str, ...], default: object) -> Any:
    if len(args) > index:
        return args[index]
    for name in names:
        if name in kwargs:
            return kwargs[name]
    return default


def _int_like(value: object) -> bool:
    return type(value) is int or (isinstance(value, int) and not isinstance(value, bool))


def _split_rule(args: tuple, kwargs: dict) -> Any:
    sizes = _arg(args, kwargs, 1, ("split_size_or_sections", "split_size", "split_sizes"), None)
    dim = _arg(args, kwargs, 2, ("dim",), 0)
    if isinstance(sizes, (list, tuple)):
        return args[0] if args else None, dim, None, ()  # as many results as sizes
    if not _int_like(sizes) or sizes <= 0:
        return None
    return args[0] if args else None, dim, split_count, (sizes,)


def _chunk_rule(args: tuple, kwargs: dict) -> Any:
    chunks = _arg(args, kwargs, 1, ("chunks",), None)
    if type(chunks) is not int or chunks <= 0:
        return None
    return args[0] if args else None, _arg(args, kwargs, 2, ("dim",), 0), chunk_count, (chunks,)


def _unbind_rule(args: tuple, kwargs: dict) -> Any:
    return args[0] if args else None, _arg(args, kwargs, 1, ("dim",), 0), unbind_count, ()


def _sections_rule(args: tuple, kwargs: dict) -> Any:
    """`tensor_split`, `hsplit`, ...: a number of sections or a list of indices fixes the count."""
    sections = _arg(
        args, kwargs, 1, ("sections", "indices", "indices_or_sections", "tensor_indices_or_sections"), None
    )
    if type(sections) is int or isinstance(sections, (list, tuple)):
        return args[0] if args else None, 0, None, ()
    return None


_ARITY_RULES = {
    "split": _split_rule, "unsafe_split": _split_rule, "split_with_sizes": _split_rule,
    "chunk": _chunk_rule, "unsafe_chunk": _chunk_rule, "unbind": _unbind_rule,
    "tensor_split": _sections_rule, "hsplit": _sections_rule, "vsplit": _sections_rule, "dsplit": _sections_rule,
}  # fmt: skip


def parse_arity(name: str, args: tuple, kwargs: dict) -> tuple | None:
    """(tensor, dimension, count function or None when the arguments fix the count, its extra
    arguments) for a splitting operation `name` called with `args`, or None when not understood."""
    rule = _ARITY_RULES.get(name)
    parsed = rule(args, kwargs) if rule is not None else None
    if parsed is None:
        return None
    tensor, dim, count, extra = parsed
    if (
        not isinstance(tensor, torch.Tensor)
        or type(dim) is not int
        or not -tensor.dim() <= dim < tensor.dim()
    ):
        return None
    return tensor, dim % tensor.dim(), count, extra
