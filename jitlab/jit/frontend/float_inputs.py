"""Float inputs of a compiled graph (a learning rate a scheduler changes, graph/dynamic_scalars.py)
handed over as 0-d float64 tensors that the graph reads back with `.item()`.

A compiler takes a Python float input as a constant: AOTAutograd traced `add_(g, alpha=-lr)` with
the example's `lr` and the compiled graph ignored every later value. TorchDynamo hands an
unspecialised float over as a 0-d float64 tensor and calls `.item()` on it first thing in the
graph; so does this module. The float the graph reads is the caller's exactly (float64 holds a
Python float), and `.item()` of a fake tensor is a symbolic float of its own (an unbacked symbol of
the ShapeEnv, which a fake-tensor mode with a ShapeEnv allows), so the compiler traces the
arithmetic on it (`-lr`, `lr / bias_correction1`) and the operators taking it (`alpha=`,
`value=`, `_foreach_mul_(params, 1 - lr * wd)`) without fixing its value. With AOTAutograd's
eager compiler that arithmetic stays Python float arithmetic and each operator gets the number as
eager code gives it (bitwise eager's); Inductor computes it in its kernels (eager's up to
rounding). Nothing is guarded on the float (a guard on an unbacked symbol raises while compiling:
the part then runs uncompiled, see host_split.py).

A graph with float inputs and static sizes is compiled inside a TracingContext whose fake-tensor
mode has a ShapeEnv, with every tensor input's fake of static sizes (the entry checks the sizes by
value), as graphs with symbolic sizes already are (backends.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

if TYPE_CHECKING:  # imported where they are used: torch loads them lazily
    from torch._subclasses.fake_tensor import FakeTensorMode


def number_positions(example_inputs: list[Any], fakes: list[Any] | None = None) -> list[int]:
    """The positions of the Python floats and ints among a graph's example inputs (an int: one read
    from tensor data by an earlier graph, graph/compiled_ints.py; not a size symbol, whose fake is a
    SymInt): a compiler would take each as a constant."""
    return [
        i
        for i, value in enumerate(example_inputs)
        if type(value) in (float, int) and (fakes is None or type(fakes[i]) in (float, int))
    ]


def number_tensor(value: float | int) -> torch.Tensor:
    """A float or an int as the 0-d tensor a compiled graph takes it as (float64 and int64 hold it exactly)."""
    return torch.tensor(value, dtype=torch.float64 if type(value) is float else torch.int64)


def has_item_reads(gm: fx.GraphModule) -> bool:
    """Whether the graph reads a number from tensor data with `.item()` (an int kept in the graph,
    graph/compiled_ints.py): compiled, like float inputs, in a fake mode whose ShapeEnv makes it an
    unbacked symbol (a compiler's own fake mode has none for static sizes, and refuses the read)."""
    return any(n.op == "call_method" and n.target == "item" for n in gm.graph.nodes)


def static_fake_mode() -> FakeTensorMode:
    """A fake-tensor mode whose ShapeEnv allows `.item()` (unbacked symbols) for a graph whose sizes
    stay static."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    return FakeTensorMode(shape_env=ShapeEnv())


def with_float_inputs(
    gm: fx.GraphModule,
    examples: list[Any],
    fakes: list[Any] | None,
    mode: FakeTensorMode,
    tensor_weights: bool = False,
) -> tuple[fx.GraphModule, list[Any], Callable[[Callable[..., Any]], Callable[..., Any]]]:
    """`gm` taking each float (int) input as a 0-d float64 (int64) tensor read with `.item()`; the inputs to compile
    it with (`fakes`, or fakes of static sizes made in `mode` from `examples`); and the wrapper that
    makes the compiled callable take the floats again. `tensor_weights`: a `lerp_` whose weight is
    such an input gets it as a 0-d tensor of its own dtype (see lerp_weights)."""
    positions = number_positions(examples, fakes)
    fakes = static_fakes(mode, examples) if fakes is None else list(fakes)
    graph = fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    last = placeholders[-1]
    for i in positions:
        node = placeholders[i]
        value = examples[i]
        wrapped = number_tensor(value)
        fakes[i] = mode.from_tensor(wrapped, static_shapes=True)
        node.meta["example_value"] = wrapped
        node.meta["val"] = fakes[i]
        with graph.inserting_after(last):
            item = graph.call_method("item", (node,))
        node.replace_all_uses_with(item, delete_user_cb=lambda user, item=item: user is not item)
        item.meta["example_value"] = value
        last = item
    if tensor_weights:
        lerp_weights(graph)
    lifted = fx.GraphModule(gm, graph)

    def wrap(compiled: Callable[..., Any]) -> Callable[..., Any]:
        def call(*inputs: object) -> Any:
            given = list(inputs)
            for i in positions:
                given[i] = number_tensor(given[i])
            return compiled(*given)

        return call

    return lifted, fakes, wrap


def has_float_lerp(gm: fx.GraphModule, examples: list[Any]) -> bool:
    """Whether a `lerp`'s weight is one of the graph's number inputs (lerp_weights would change it)."""
    floats = {
        n
        for i, n in enumerate(p for p in gm.graph.nodes if p.op == "placeholder")
        if i in number_positions(examples)
    }
    return any(_lerp_weight(node) in floats for node in gm.graph.nodes)


def lerp_weights(graph: fx.Graph) -> None:
    """Each `lerp`/`lerp_` whose weight is a float input read with `.item()` given the weight as a
    0-d tensor of the tensor's dtype instead. Inductor's decomposition of a lerp with a number as
    its weight decides on the number (`weight >= 0.5`), which an unbacked float cannot answer (the
    part ran uncompiled: Adam's `exp_avg.lerp_(grad, 1 - beta1)` once OneCycleLR changes beta1);
    with a tensor weight the choice is made inside the kernel. ATen's lerp casts a number weight to
    the tensor's computation type too, so the values are the same up to the compiler's rounding."""
    for node in list(graph.nodes):
        weight = _lerp_weight(node)
        if weight is None or weight.op != "call_method" or weight.target != "item":
            continue
        like = node.args[0].meta.get("example_value") if isinstance(node.args[0], fx.Node) else None
        if not isinstance(like, torch.Tensor):
            continue
        with graph.inserting_before(node):
            tensor = graph.call_method("to", (weight.args[0], like.dtype))
        if len(node.args) > 2:
            node.args = (*node.args[:2], tensor, *node.args[3:])
        else:
            node.kwargs = {**node.kwargs, "weight": tensor}


def _lerp_weight(node: fx.Node) -> Any:
    is_lerp = (node.op == "call_method" and node.target in ("lerp", "lerp_")) or (
        node.op == "call_function" and node.target is torch.lerp
    )
    if not is_lerp:
        return None
    return node.args[2] if len(node.args) > 2 else node.kwargs.get("weight")


def static_fakes(mode: FakeTensorMode, examples: list[Any]) -> list[Any]:
    """Fakes of static sizes made in `mode` for the tensors among `examples` (other values as they are)."""
    return [mode.from_tensor(v, static_shapes=True) if isinstance(v, torch.Tensor) else v for v in examples]
