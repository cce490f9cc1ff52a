"""Helpers of the run on fake tensors with symbolic sizes (graph/shapes.py): which node of the graph
first fixed an input's size to a number (for the note of that pin), whether a decision lost its
expression there (it could not be kept as a guard), which dimensions stayed symbolic, the run's
CPU-time limit, and the copies of the graph and tensor-guard arguments the run and its entry use."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

if TYPE_CHECKING:  # imported where they are used: torch loads them lazily
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

from jitlab.jit.errors import Unsupported
from jitlab.jit.graph.fused_optimizers import is_fused_optimizer_kernel
from jitlab.jit.reasons import ReasonKind

#: CPU seconds the run on fake tensors may take (sympy can take many minutes on the size expressions
#: of a graph whose every dimension is symbolic: timm's Swin partitions windows of its image height
#: and width); past it the run stops (`SlowFakeRun`)
FAKE_RUN_CPU_S = 30.0


class SlowFakeRun(Unsupported):
    """The run on fake tensors took longer than FAKE_RUN_CPU_S (graph/shapes.py then tries again
    with only the dimensions that varied symbolic, as TorchDynamo's automatic dynamic shapes)."""


def _symbolic_dims(value: object) -> bool:
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
        def __init__(self, gm: fx.GraphModule, mode: FakeTensorMode, symbols: list[Any]) -> None:
            super().__init__(gm, mode)
            self.symbols = symbols
            self.fixed_by: dict[Any, fx.Node] = {}
            self._known = 0
            self.deadline = time.process_time() + FAKE_RUN_CPU_S

        def run_node(self, n: fx.Node) -> Any:
            if time.process_time() > self.deadline:
                raise SlowFakeRun(
                    f"the run on fake tensors took more than {FAKE_RUN_CPU_S:.0f} s of CPU time",
                    ReasonKind.DATA_DEPENDENT,
                )
            if n.op == "call_function" and is_fused_optimizer_kernel(n.target):
                return None  # in place, no size or layout changed, and maybe no fake kernel
            out = super().run_node(n)
            if _plain(out):
                # torch before 2.13 keeps only tensors and symbolic numbers as a node's value: a
                # Python int or bool the graph computed (a size compared, `len`) read None, a tuple
                # of them Nones, and every fact on it seemed to differ, so sizes stayed static
                # (GPT-2's cache length). torch 2.13 keeps the value itself, as here.
                n.meta["val"] = out
            env = self._mode.shape_env
            if len(env.replacements) != self._known:
                self._known = len(env.replacements)
                for symbol in self.symbols:
                    if symbol not in self.fixed_by and env.replace(symbol).is_number:
                        self.fixed_by[symbol] = n
            return out

        def call_function(self, target: object, args: tuple, kwargs: dict) -> object:
            drawn = getattr(target, "jit_drawn", None)  # a slot draw: argument_generators.py
            return super().call_function(drawn or target, args, _without_generator(kwargs))

        def call_method(self, target: object, args: tuple, kwargs: dict) -> object:
            return super().call_method(target, args, _without_generator(kwargs))

    return FixingProp


def _without_generator(kwargs: dict) -> dict:
    """An operation's keyword arguments without its random generator: a fake run draws no number and
    needs none, and torch's kernels of `randn(size, generator=g)` take no symbolic size ("SymIntArrayRef
    expected to contain only concrete integers"), which pinned every size a graph drew with."""
    if "generator" not in kwargs:
        return kwargs
    return {k: v for k, v in kwargs.items() if k != "generator"}


def _plain(value: object) -> bool:
    """A Python number or bool, or a tuple or list of them: a value FakeTensorProp may drop."""
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return type(value) in (int, float, bool)


def still_symbolic(env: ShapeEnv, fake: torch.Tensor | None) -> set[int]:
    """The dimensions of a fake input that the fake run left symbolic (a size matched with a weight's
    is fixed there: explain() shows it as the number)."""
    if fake is None:
        return set()
    return {
        d
        for d, n in enumerate(fake.shape)
        if isinstance(n, torch.SymInt) and not env.replace(n.node.expr).is_number
    }


def only_varied(symbolic: dict[fx.Node, frozenset[int]]) -> dict[fx.Node, frozenset[int]]:
    """Of the symbolic dimensions of each input, those seen with two sizes (`jit_varied`)."""
    varied = {n: dims & frozenset(n.meta.get("jit_varied", ())) for n, dims in symbolic.items()}
    return {n: dims for n, dims in varied.items() if dims}


def sizes_from(node: fx.Node, floats: dict[str, float]) -> bool:
    """Whether `node` makes a tensor whose size a float in `floats` decides (`arange(0, f)`)."""
    name = getattr(node.target, "__name__", str(node.target))
    return name in ("arange", "range", "linspace", "logspace") and any(
        arg.name in floats for arg in node.all_input_nodes
    )


def with_constants(gm: fx.GraphModule, values: dict[str, float]) -> fx.GraphModule:
    """A copy of `gm` where the nodes named in `values` are those constants (inputs too)."""
    graph = fx.Graph()
    env: dict[fx.Node, Any] = {}
    for node in gm.graph.nodes:
        env[node] = values[node.name] if node.name in values else graph.node_copy(node, env.__getitem__)
    return fx.GraphModule(gm, graph)


def symbolic_dims(value: object) -> bool:
    return isinstance(value, torch.Tensor) and any(isinstance(n, torch.SymInt) for n in value.shape)


def tensor_guard_args(metas: list[tuple], dims_list: list[frozenset[int]]) -> tuple[list, list]:
    """`dynamic_dims_sizes` and `dynamic_dims_strides` for TensorGuards: None where a size is
    symbolic, and for strides that depend on a symbolic size (contiguous inputs only)."""
    sizes, strides = [], []
    for (shape, stride, *_rest), dims in zip(metas, dims_list):
        sizes.append([None if d in dims else n for d, n in enumerate(shape)])
        strides.append(
            [None if any(j in dims for j in range(d + 1, len(shape))) else s for d, s in enumerate(stride)]
        )
    return sizes, strides
