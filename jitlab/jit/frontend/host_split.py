"""Compiling a graph that holds host operations: a backward pass, `.grad` reads and writes, grad-mode
switches, profiler ranges (a whole training step, see graph/training_nodes.py) and fused optimizer
kernels, which no compiler takes (graph/fused_optimizers.py).

A compiler takes tensor operations only: AOTAutograd cannot trace `loss.backward()` or `p.grad`. So
the graph is cut, in program order, into runs of tensor operations, each compiled on its own, and the
host operations between them run as they are, from a GraphModule that calls the compiled parts:

    forward (compiled: AOTAutograd also compiles its backward)
    backward(loss); p.grad for each parameter; set_grad_enabled(False)      (host)
    optimizer update (compiled, for inference: parameters and state changed in place)
    p.grad = None for each parameter                                          (host)

The backward node runs torch's autograd engine on the compiled forward's output, which calls the
backward AOTAutograd compiled. Each part is compiled under the grad mode it runs in (the host's
switches before it decide), so the optimizer's part is an inference graph whose in-place updates
AOTAutograd keeps in place. With the eager backend nothing is cut: the graph runs as it is.

With symbolic sizes (graph/shapes.py) each part is compiled for every size: it gets the fake values
of its inputs from the run on fake tensors, requiring grad where the real inputs do. Draws from a
random generator also run on the host (the caller's generator always, one the graph keeps for
symbolic sizes: graph/argument_generators.py, training_nodes.draws_from_kept_generator), and the
sizes of inputs they take are read there too.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

from jitlab.jit.entries.check_prefix import mutated, origin_of
from jitlab.jit.frontend.detached_inputs import detach_each, only_detached, requires_grad
from jitlab.jit.frontend.saved_inputs import changed_before_backward
from jitlab.jit.graph.autocast_nodes import open_before
from jitlab.jit.graph.data_values import DATA_INT
from jitlab.jit.graph.tensor_scalars import without_tensor_scalars
from jitlab.jit.graph.training_nodes import BACKWARD_FUNCTIONS, get_grad, host_nodes, is_host, set_grad

#: compiles one part: `compile_part(part, example_inputs, fake_inputs)`, the fakes None for static sizes
PartCompiler = Callable[[fx.GraphModule, list[Any], "list[Any] | None"], Callable[..., Any]]


def compile_split(
    gm: fx.GraphModule,
    compile_part: PartCompiler,
    fake_of: Callable[[fx.Node], Any] | None = None,
    notes: list[str] | None = None,
) -> Callable[..., Any]:
    """`gm` as a GraphModule that runs its host operations and calls each run of tensor operations
    compiled by `compile_part(part, example_inputs, fake_inputs)`; returns its `forward`. A run left
    uncompiled is said in `notes` (the entry's backend note in explain()): it is not silent.

    `fake_of` (with symbolic sizes): the fake value with symbolic sizes of a node of `gm` (the run on
    fake tensors, graph/shapes.py), handed to the compiler for each part's input that is that node,
    so that every part is compiled for every size. It must require grad where the real value does:
    AOTAutograd compiles a part none of whose inputs requires grad as inference, with no backward."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and any(node.target is f for f in BACKWARD_FUNCTIONS):
            positional = node.args[4] if node.target is torch.autograd.grad and len(node.args) > 4 else False
            if node.kwargs.get("create_graph") or positional:  # AOTAutograd's backward is not differentiable
                raise ValueError("a backward pass with create_graph=True (double backward) runs eagerly")
    top = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    host: set[fx.Node] = set()
    run: list[fx.Node] = []
    grad = [torch.is_grad_enabled()]  # the grad mode the next part runs in
    parts: list[Any] = []
    constants: list[str] = []
    numbers: set[fx.Node] = {n for n in gm.graph.nodes if n.op == "placeholder" and _is_number(n)}
    kept_draws = fake_of is not None  # symbolic sizes: draws from a kept generator run on the host
    sizes = _sizes_for_host(gm.graph, kept_draws)
    regions = dict(zip(gm.graph.nodes, open_before(list(gm.graph.nodes))))

    def flush() -> None:
        if run:
            note = _emit_part(gm, top, env, run, compile_part, grad[0], parts, fake_of)
            if note is not None and notes is not None:
                notes.append(note)
            run.clear()

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = top.placeholder(node.name)
        elif node.op == "get_attr":  # a constant: copied into each part using it, and kept here
            env[node] = top.node_copy(node)
            constants.append(node.target)
        elif node.op == "output":
            flush()
            top.output(fx.node.map_arg(node.args[0], env.__getitem__))
        elif node in sizes:
            # a size of an input read for a host operation (`torch.randn((b, t), generator=g)` with
            # `b, t = x.shape`): read between the parts, as eager code reads it; a later part that
            # uses it too gets it as an int input (a SymInt for symbolic sizes)
            env[node] = top.node_copy(node, env.__getitem__)
            node.meta.setdefault("example_value", _evaluate(node))
        elif _python_number(node, numbers):
            # arithmetic on float inputs (`-lr`, `1 - lr * wd`): Python arithmetic between the parts,
            # as eager code does it; a part gets the result as a float input (float_inputs.py)
            numbers.add(node)
            env[node] = top.node_copy(node, env.__getitem__)
            node.meta.setdefault("example_value", _evaluate(node))
        elif is_host(node, host, kept_draws):
            if regions[node]:
                # a compiled part runs the casts autocast made when it was traced, not autocast
                # itself: the host operation would run without it (graph/autocast_nodes.py)
                raise ValueError(
                    f"a host operation ({_what(node)}) inside `with torch.autocast(...)` runs the graph uncompiled"
                )
            flush()
            host.add(node)
            env[node] = _host_copy(top, node, env)
            if node.target is torch._C._set_grad_enabled:
                grad[0] = bool(node.args[0])
        else:
            run.append(node)
    root = torch.nn.Module()
    for name in constants:
        setattr(root, name, getattr(gm, name))
    for i, part in enumerate(parts):
        setattr(root, f"part{i}", part)
    split = fx.GraphModule(root, top)
    return split.forward


def _emit_part(
    gm: fx.GraphModule,
    top: fx.Graph,
    env: dict[fx.Node, fx.Node],
    nodes: list[fx.Node],
    compile_part: PartCompiler,
    grad: bool,
    parts: list[Any],
    fake_of: Callable[[fx.Node], Any] | None,
) -> str | None:
    """Compile the run `nodes` as one graph and call it from `top`; or say why it runs uncompiled."""
    inside = set(nodes)
    inputs: list[fx.Node] = []
    for node in nodes:
        for arg in node.all_input_nodes:
            if arg not in inside and arg not in inputs and arg.op != "get_attr":
                inputs.append(arg)
    outputs = [n for n in nodes if any(u not in inside for u in n.users)]
    differentiable = [n.name for n in outputs if _requires_grad(n)]
    if grad and len(differentiable) > 1:
        # AOTAutograd makes one autograd node of a graph: a backward pass from one output would run
        # the backward of all (zero gradients for inputs eager leaves None, and a second backward
        # from another output raises). Such a run stays uncompiled, each operation its own node.
        shown = ", ".join(differentiable[:4]) + (", ..." if len(differentiable) > 4 else "")
        return _uncompiled(
            top,
            env,
            nodes,
            f"{len(differentiable)} of its results that require grad are used after it "
            f"({shown}), and a compiled part is one autograd node",
        )
    copied: list[fx.Node] = []
    if grad and differentiable:
        # what the compiled part saves for its backward must not change before that backward runs
        copied, changed = changed_before_backward(list(gm.graph.nodes), nodes, inputs, outputs)
        changed_here = {origin_of(m) for node in nodes for m in mutated(node)}
        if changed or any(arg in changed_here for arg in copied):
            shown = ", ".join(n.name for n in (changed or copied)[:4])
            return _uncompiled(
                top,
                env,
                nodes,
                f"the call changes in place {shown} after it and before its backward "
                "pass, and a compiled part may save it for that backward where eager code does not",
            )
    graph = fx.Graph()
    local: dict[fx.Node, fx.Node] = {}
    for arg in inputs:
        local[arg] = graph.placeholder(f"x{len(local)}")
        # what it is tells tensor_scalars.py a number from a tensor; a number read from tensor data by
        # an earlier part (compiled_ints.py) is a number too (`add_(g, alpha=-lr)` stays as eager has it)
        if "example_value" in arg.meta or DATA_INT in arg.meta:
            local[arg].meta["example_value"] = arg.meta.get("example_value", arg.meta.get(DATA_INT))
    # an int read from tensor data by an earlier part: compile_graph hands it over as a 0-d tensor
    ints = [arg for arg in inputs if DATA_INT in arg.meta]
    for node in nodes:
        for arg in node.all_input_nodes:
            if arg.op == "get_attr" and arg not in local:
                local[arg] = graph.node_copy(arg)
        local[node] = graph.node_copy(node, local.__getitem__)
    graph.output(tuple(local[n] for n in outputs))
    without_tensor_scalars(graph)
    part = fx.GraphModule(gm, graph)
    missing = [arg.name for arg in inputs if "example_value" not in arg.meta and arg not in ints]
    if missing:
        raise ValueError(f"no example value for {', '.join(missing)}, an input of a compiled part")
    if ints and fake_of is not None:
        raise ValueError("an int read from tensor data is an input of a part compiled for symbolic sizes")
    examples = [arg.meta[DATA_INT] if arg in ints else arg.meta["example_value"] for arg in inputs]
    fakes = [fake_of(arg) for arg in inputs] if fake_of is not None else None
    # an input requiring grad that the part only detaches (`h.detach() @ w`): handed over detached
    detached = [_requires_grad(arg) and only_detached(arg, inside) for arg in inputs]
    examples = detach_each(examples, detached)
    fakes = detach_each(fakes, detached)
    copy = [arg in copied for arg in inputs]
    examples = [v.clone() if c else v for v, c in zip(examples, copy)]
    fakes = [v.clone() if c else v for v, c in zip(fakes, copy)] if fakes is not None else None
    with torch.set_grad_enabled(grad):
        compiled = compile_part(part, examples, fakes)
    name = f"part{len(parts)}"
    parts.append(_Part(compiled))
    given = [top.call_method("detach", (env[a],)) if d else env[a] for a, d in zip(inputs, detached)]
    given = [top.call_method("clone", (g,)) if c else g for g, c in zip(given, copy)]
    call = top.call_module(name, tuple(given))
    for i, node in enumerate(outputs):
        env[node] = top.call_function(operator.getitem, (call, i))
    return None


def _uncompiled(top: fx.Graph, env: dict[fx.Node, fx.Node], nodes: list[fx.Node], why: str) -> str:
    """Run `nodes` uncompiled from `top`, each operation its own node as in eager code; the note."""
    for node in nodes:
        env[node] = top.node_copy(node, env.__getitem__)
    return f"a part of {len(nodes)} operations runs uncompiled: {why}"


def _host_copy(top: fx.Graph, node: fx.Node, env: dict[fx.Node, fx.Node]) -> fx.Node:
    """`node` copied into the GraphModule that runs between the parts; a `.grad` read or write as
    the attribute access itself (`p.grad`, `setattr(p, "grad", v)`), not a call of
    training_nodes' Python function.

    Why: the GraphModule's function has a local for every node and parameter, and CPython puts
    frames one after another in chunks of 16 KiB and more, allocated with mmap when a frame does not
    fit in the current one and unmapped when it returns. On torchvision's mobilenet_v2 this function
    (12.8 KB) filled the end of the chunk its caller, the cache entry (19.7 KB), started, so each of
    its 632 calls of `get_grad` and `set_grad` mapped and unmapped a chunk of its own, and each
    unmapping flushed the other CPU's TLB: 11 ms of a 30 ms AdamW step (perf: a third of the time in
    the kernel's TLB shootdowns; 25,673 munmaps in 5 s against 70 for torch.compile). Done in C,
    they push no frame: 17.3-18.6 ms, as torch.compile(model) + torch.compile(opt.step) (17.6-18.0).
    Any other Python call from this function can pay the same; the few left are a handful a step."""
    args = fx.node.map_arg(node.args, env.__getitem__)
    if node.target is get_grad and not node.kwargs:
        return top.call_function(getattr, (args[0], "grad"))
    if node.target is set_grad and not node.kwargs:
        return top.call_function(setattr, (args[0], "grad", args[1]))
    return top.node_copy(node, env.__getitem__)


#: Python functions on numbers a part may take out of the graph, to run between the parts
_NUMBER_MODULES = ("_operator", "math", "builtins")


def _is_number(node: fx.Node) -> bool:
    return type(node.meta.get("example_value")) is float


def _python_number(node: fx.Node, numbers: set[fx.Node]) -> bool:
    """Whether `node` is Python arithmetic on graph inputs that are numbers (a learning rate) and on
    other such arithmetic only: it needs no tensor, so it runs between the parts, exactly as eager."""
    if node.op != "call_function" or getattr(node.target, "__module__", None) not in _NUMBER_MODULES:
        return False
    inputs = node.all_input_nodes
    if not inputs or not all(arg in numbers for arg in inputs):
        return False
    return type(node.meta.get("example_value", _evaluate(node))) is float


def _evaluate(node: fx.Node) -> object:
    """The example value of Python arithmetic (or a size read) on example values."""
    args = fx.node.map_arg(node.args, lambda n: n.meta["example_value"])
    kwargs = fx.node.map_arg(node.kwargs, lambda n: n.meta["example_value"])
    if node.op == "call_method":
        return getattr(args[0], node.target)(*args[1:], **kwargs)
    return node.target(*args, **kwargs)


#: methods of a tensor that read its sizes
_SIZE_METHODS = ("size", "dim", "numel")


def _size_read(node: fx.Node) -> bool:
    """Whether `node` reads the sizes of a graph input (`x.size(0)`, `x.size()[1]`), or is Python
    arithmetic on such reads and constants only: what a host operation can take without a part."""
    if node.op == "call_method":
        return node.target in _SIZE_METHODS and node.args[0].op == "placeholder" and not node.kwargs
    if node.op != "call_function" or getattr(node.target, "__module__", None) not in _NUMBER_MODULES:
        return False
    inputs = node.all_input_nodes
    return bool(inputs) and all(_size_read(arg) for arg in inputs)


def _sizes_for_host(graph: fx.Graph, kept_draws: bool) -> set[fx.Node]:
    """The size reads (`_size_read`) a host operation uses, directly or through other size reads.
    Left in a part, a size would reach the host operation as an output of a compiled part, with no
    example value to compile the next part with."""
    host = host_nodes(graph, kept_draws)
    sizes: set[fx.Node] = set()
    for node in reversed(graph.nodes):
        if node in host or node in sizes:
            sizes.update(arg for arg in node.all_input_nodes if _size_read(arg))
    return sizes


def _requires_grad(node: fx.Node) -> bool:
    return requires_grad(node.meta.get("example_value"))


class _Part(torch.nn.Module):
    """A compiled run of tensor operations, as a submodule of the GraphModule that calls it."""

    def __init__(self, compiled: Callable[..., Any]) -> None:
        super().__init__()
        self.compiled = compiled

    def forward(self, *inputs: Any) -> Any:
        return self.compiled(*inputs)


def _what(node: fx.Node) -> str:
    """A host operation as explain() names it: its function's name."""
    return getattr(node.target, "__name__", str(node.target))
