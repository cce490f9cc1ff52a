"""0-d integer tensors computed from sizes only, read back as ints where a size is expected.

Longformer chunks its attention with `x.view(b, torch.div(x.size(1), 2 * w, rounding_mode="trunc"),
2 * w, d)` and `x.new_zeros((b, torch.div(t, w, rounding_mode="trunc") - 1 + 1, w, 2 * w + 1))`:
`torch.div` of two Python ints makes a 0-d int64 *tensor*, which `view` reads back with
`__index__`. Recorded as it is, the graph hands `view` a tensor; on the fake run with symbolic sizes
that read is an unbacked value (`GuardOnDataDependentSymNode: 8*u0 < 16`), so the sizes stayed static
and Longformer took a capture per length (8, the cache limit, over the zoo's 10 shapes).

`read_size_tensors` gives each such tensor an int twin computed by Python arithmetic on the same
sizes (`torch.div(a, b, rounding_mode="trunc")` is `trunc_div(a, b)`, `"floor"` is `a // b`; `t - 1`
on such a tensor is `twin - 1`) and hands the twin, not the tensor, to the arguments that take a size
(`view`, `reshape`, `expand`, `new_zeros`, `as_strided`, `narrow`, `torch.zeros`, ...), where the
operation would read the tensor with `__index__` and get the same int. Every other use (the tensor
as a tensor operand, returned, stored) keeps the tensor, which stays in the graph: it still raises
where eager code raises (a division by zero). Only a tensor whose inputs are all ints made from sizes
(`size`, `numel`, `stride` nodes, int graph inputs and arithmetic on them) or constants counts: a
0-d tensor computed from tensor data is data, and keeps its reads as they were.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx as fx

# nodes whose value is an int computed from sizes: `size(x, d)`, `numel(x)`, `stride(x, d)`
_SIZE_METHODS = {"size": 2, "numel": 1, "stride": 2}
_INT_ARITHMETIC = {
    operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, operator.neg, operator.pos,
    abs, max, min,
}  # fmt: skip
# methods of a 0-d int tensor giving another one: (method, Python operator, whether operands swap)
_TENSOR_ARITHMETIC = {
    "add": (operator.add, False), "__add__": (operator.add, False), "__radd__": (operator.add, True),
    "sub": (operator.sub, False), "__sub__": (operator.sub, False), "__rsub__": (operator.sub, True),
    "mul": (operator.mul, False), "__mul__": (operator.mul, False), "__rmul__": (operator.mul, True),
}  # fmt: skip
_OPERATORS = {operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul}
# where an operation takes sizes: method -> positions of `args` (after the tensor) and keyword names
_SIZE_ARGUMENTS: dict[str, tuple[range | tuple[int, ...], tuple[str, ...]]] = {
    "view": (range(1, 64), ("size",)),
    "reshape": (range(1, 64), ("shape",)),
    "expand": (range(1, 64), ("size",)),
    "repeat": (range(1, 64), ("repeats",)),
    "new_zeros": ((1,), ("size",)),
    "new_ones": ((1,), ("size",)),
    "new_empty": ((1,), ("size",)),
    "new_full": ((1,), ("size",)),
    "as_strided": ((1, 2, 3), ("size", "stride", "storage_offset")),
    "narrow": ((2, 3), ("start", "length")),
}
_SIZE_FUNCTIONS: dict[Any, tuple[range | tuple[int, ...], tuple[str, ...]]] = {
    torch.zeros: (range(64), ("size",)),
    torch.ones: (range(64), ("size",)),
    torch.empty: (range(64), ("size",)),
    torch.full: ((0,), ("size",)),
}


def trunc_div(a: int | torch.SymInt, b: int | torch.SymInt) -> int | torch.SymInt:
    """`torch.div(a, b, rounding_mode="trunc")` of two ints, as an int, exactly (no float division).
    On SymInts (the fake run, a compiling backend's tracing) each sign test is a guard."""
    negative = bool(a < 0) is not bool(b < 0)
    quotient = abs(a) // abs(b)
    return -quotient if negative else quotient


def read_size_tensors(graph: fx.Graph) -> int:
    """Hand int twins of the size-only 0-d tensors to the size arguments that read them (see the
    module docstring); returns how many arguments were replaced."""
    ints: dict[fx.Node, bool] = {}
    twins: dict[fx.Node, fx.Node] = {}
    replaced = 0
    for node in list(graph.nodes):
        twin = _twin(graph, node, ints, twins)
        if twin is not None:
            twins[node] = twin
            continue
        positions = _size_positions(node)
        if positions is None or not twins:
            continue
        at, names = positions
        args = list(node.args)
        for i in at:
            if i >= len(args):
                break
            args[i], n = _substitute(args[i], twins)
            replaced += n
        kwargs = dict(node.kwargs)
        for name in names:
            if name in kwargs:
                kwargs[name], n = _substitute(kwargs[name], twins)
                replaced += n
        node.args, node.kwargs = tuple(args), kwargs
    return replaced


def _is_int(value: object, ints: dict[fx.Node, bool]) -> bool:
    """Whether `value` is an int made from sizes (or a constant int) while the graph runs."""
    if type(value) is int:
        return True
    if not isinstance(value, fx.Node):
        return False
    known = ints.get(value)
    if known is None:
        known = ints[value] = _int_node(value, ints)
    return known


def _int_node(node: fx.Node, ints: dict[fx.Node, bool]) -> bool:
    if node.op == "placeholder":
        return type(node.meta.get("example_value")) is int  # an int input (dynamic_ints.py)
    if node.op == "call_method" and _SIZE_METHODS.get(str(node.target)) == len(node.args) and not node.kwargs:
        tensor, *dim = node.args
        return isinstance(tensor, fx.Node) and all(type(d) is int for d in dim)
    if node.op == "call_function" and node.target in _INT_ARITHMETIC and not node.kwargs:
        return all(_is_int(a, ints) for a in node.args)
    if node.op == "call_function" and node.target is trunc_div:
        return True
    return False


def _int_tensor(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() == 0 and value.dtype == torch.int64


def _twin(graph: fx.Graph, node: fx.Node, ints: dict, twins: dict[fx.Node, fx.Node]) -> fx.Node | None:
    """The int twin of `node` when it is a size-only 0-d int64 tensor, inserted after it; else None."""
    if node.op not in ("call_function", "call_method") or not _int_tensor(node.meta.get("example_value")):
        return None
    operand = lambda v: twins.get(v, v) if isinstance(v, fx.Node) and v in twins else v  # noqa: E731
    known = lambda v: (isinstance(v, fx.Node) and v in twins) or _is_int(v, ints)  # noqa: E731
    target, args, kwargs = node.target, node.args, node.kwargs
    if target is torch.div and len(args) == 2 and set(kwargs) == {"rounding_mode"}:
        if not all(_is_int(a, ints) for a in args):
            return None  # a tensor operand: data, not sizes
        how = {"trunc": trunc_div, "floor": operator.floordiv}.get(kwargs["rounding_mode"])
        call: tuple[Any, tuple] | None = (how, args) if how is not None else None
    elif node.op == "call_method" and target in _TENSOR_ARITHMETIC and len(args) == 2 and not kwargs:
        fn, swap = _TENSOR_ARITHMETIC[str(target)]
        if args[0] not in twins or not known(args[1]):
            return None
        pair = (operand(args[0]), operand(args[1]))
        call = (fn, pair[::-1] if swap else pair)
    elif node.op == "call_function" and target in _OPERATORS and len(args) == 2 and not kwargs:
        if not any(isinstance(a, fx.Node) and a in twins for a in args) or not all(known(a) for a in args):
            return None
        call = (_OPERATORS[target], tuple(operand(a) for a in args))
    else:
        return None
    if call is None:
        return None
    with graph.inserting_after(node):
        twin = graph.call_function(call[0], call[1])
    for key in ("jit_segment",):
        if key in node.meta:
            twin.meta[key] = node.meta[key]
    return twin


def _size_positions(node: fx.Node) -> tuple[range | tuple[int, ...], tuple[str, ...]] | None:
    if node.op == "call_method":
        return _SIZE_ARGUMENTS.get(str(node.target))
    if node.op == "call_function":
        try:
            return _SIZE_FUNCTIONS.get(node.target)
        except TypeError:  # an unhashable target
            return None
    return None


def _substitute(value: object, twins: dict[fx.Node, fx.Node]) -> tuple[Any, int]:
    """`value` with each size-only tensor (also inside tuples and lists) replaced by its twin."""
    if isinstance(value, fx.Node):
        twin = twins.get(value)
        return (twin, 1) if twin is not None else (value, 0)
    if type(value) in (tuple, list):
        items, count = [], 0
        for item in value:
            new, n = _substitute(item, twins)
            items.append(new)
            count += n
        return type(value)(items), count
    return value, 0
