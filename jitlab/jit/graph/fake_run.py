"""Helpers of the run on fake tensors with symbolic sizes (graph/shapes.py): which node of the graph
first fixed an input's size to a number (for the note of that pin), whether a decision lost its
expression there (it could not be kept as a guard), and which dimensions stayed symbolic."""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.fx as fx


def _symbolic_dims(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and any(isinstance(n, torch.SymInt) for n in value.shape)


def symbolic_args(node: fx.Node, values: dict[str, Any]) -> bool:
    """Whether a node's arguments include a symbolic size (a SymInt, or a tensor with one; for
    `x.size(d)`, that dimension of x)."""
    if (
        node.op == "call_method"
        and node.target == "size"
        and len(node.args) == 2
        and type(node.args[1]) is int
    ):
        fake = values.get(node.args[0].name)
        return isinstance(fake, torch.Tensor) and isinstance(fake.shape[node.args[1]], torch.SymInt)
    for arg in node.all_input_nodes:
        value = values.get(arg.name)
        if isinstance(value, (torch.SymInt, torch.SymBool, torch.SymFloat)) or _symbolic_dims(value):
            return True
    return False


@functools.cache
def fixing_prop() -> type:
    """FakeTensorProp noting which node first fixed each input size to a number (an operation not
    written for symbolic sizes), for the note of that pin. Made on first use: importing it loads
    torch's fake tensors, which a program that never gets symbolic sizes does not need."""
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    class FixingProp(FakeTensorProp):
        def __init__(self, gm: fx.GraphModule, mode: Any, symbols: list[Any]) -> None:
            super().__init__(gm, mode)
            self.symbols = symbols
            self.fixed_by: dict[Any, fx.Node] = {}
            self._known = 0

        def run_node(self, n: fx.Node) -> Any:
            out = super().run_node(n)
            env = self._mode.shape_env
            if len(env.replacements) != self._known:
                self._known = len(env.replacements)
                for symbol in self.symbols:
                    if symbol not in self.fixed_by and env.replace(symbol).is_number:
                        self.fixed_by[symbol] = n
            return out

    return FixingProp


def still_symbolic(env: Any, fake: Any) -> set[int]:
    """The dimensions of a fake input that the fake run left symbolic (a size matched with a weight's
    is fixed there: explain() shows it as the number)."""
    if fake is None:
        return set()
    return {
        d
        for d, n in enumerate(fake.shape)
        if isinstance(n, torch.SymInt) and not env.replace(n.node.expr).is_number
    }
