"""Compiling a captured `torch.fx.GraphModule` with the chosen backend.

"eager" runs the GraphModule's generated `forward` directly. A name is looked up in torch._dynamo's
backend registry (the same compilers `torch.compile(backend=...)` uses, "inductor" included) and
called with the GraphModule and example inputs; the guards of `jitlab.jit` replace Dynamo's, so
the compiled callable is called directly. A callable is used as such: `backend(gm, example_inputs)`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

from jitlab.errors import UserError
from jitlab.jit.frontend.aliased_inputs import aliased_mutation
from jitlab.jit.frontend.autograd_groups import separate_gradient_results
from jitlab.jit.frontend.detached_inputs import detach_each, detached_positions, with_detached_inputs
from jitlab.jit.frontend.float_inputs import (
    has_float_lerp,
    has_item_reads,
    number_positions,
    number_tensor,
    static_fake_mode,
    static_fakes,
    with_float_inputs,
)
from jitlab.jit.frontend.host_split import compile_split
from jitlab.jit.frontend.size_inputs import with_size_inputs
from jitlab.jit.graph.result_reads import split_result_reads
from jitlab.jit.graph.training_nodes import has_host_nodes

if TYPE_CHECKING:
    from jitlab.jit.graph.shapes import ShapeInfo

Backend = str | Callable[[fx.GraphModule, list[torch.Tensor]], Callable[..., Any]]


def check_backend(backend: Backend) -> None:
    """Reject an unknown backend name early, with the names that exist."""
    if callable(backend):
        return
    if not isinstance(backend, str):
        raise UserError(f"backend must be a name or a callable, not {type(backend).__name__}")
    if backend == "eager":
        return
    import torch._dynamo

    names = torch._dynamo.list_backends(exclude_tags=())
    if backend not in names:
        raise UserError(
            f"unknown backend {backend!r}: use 'eager', a callable, or one of {', '.join(sorted(names))}"
        )


def compile_graph(
    gm: fx.GraphModule,
    example_inputs: list[torch.Tensor],
    backend: Backend,
    shape: ShapeInfo | None = None,
    fake_inputs: list[Any] | None = None,
    notes: list[str] | None = None,
) -> Callable[..., Any]:
    """The callable that runs the graph: `compiled(*inputs) -> tuple of outputs`. What the compiler
    did not compile without failing (a training step's part left uncompiled) is added to `notes`.

    With symbolic sizes (`shape`, a shapes.ShapeInfo), the compiler runs inside a TracingContext
    holding the fake-tensor mode whose ShapeEnv knows the symbols, as TorchDynamo calls it: named
    backends get the fake inputs (symbolic sizes, each size symbol also an input of its own), a
    callable backend the real ones. A training step's parts (host_split.py) are compiled the same
    way, each with the fake values of its inputs."""
    if backend == "eager":
        return gm.forward
    split = split_result_reads(gm)
    if split is not None:  # `return loss.item()`: read after the compiled graph (graph/result_reads.py)
        gm, read_after = split
        return read_after(compile_graph(gm, example_inputs, backend, shape, fake_inputs, notes))
    if has_host_nodes(gm, kept_draws=shape is not None):  # a training step: compiled part by part
        if shape is None:
            return compile_split(
                gm,
                lambda part, inputs, _fakes: compile_graph(part, inputs, backend, notes=notes),
                notes=notes,
            )
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        given = dict(zip(placeholders, fake_inputs or shape.placeholders, strict=True))
        return compile_split(
            gm,
            lambda part, inputs, fakes: compile_graph(part, inputs, backend, shape, fakes, notes),
            lambda node: given[node] if node in given else shape.fake_input(node),
            notes,
        )
    separate = separate_gradient_results(gm) if torch.is_grad_enabled() else []
    if separate:  # eager code keeps them in separate autograd graphs (autograd_groups.py)
        if notes is not None:
            shown = ", ".join(separate[:4]) + (", ..." if len(separate) > 4 else "")
            notes.append(
                f"a graph of {len(gm.graph.nodes)} nodes runs uncompiled: its results {shown} require grad "
                "but share no operation, so eager code keeps them in separate autograd graphs, and a "
                "compiled graph is one autograd node"
            )
        return gm.forward
    aliased = aliased_mutation(gm, list(example_inputs))
    if aliased is not None:
        if notes is not None:
            notes.append(aliased)
        return gm.forward
    detached = detached_positions(gm, example_inputs)
    if any(detached):  # an input the graph only detaches is no edge of its autograd node, as in eager
        fakes = fake_inputs if fake_inputs is not None or shape is None else shape.placeholders
        compiled = compile_graph(
            gm, detach_each(example_inputs, detached), backend, shape, detach_each(fakes, detached), notes
        )
        return with_detached_inputs(compiled, detached)
    if callable(backend):
        compiler = backend
    else:
        from torch._dynamo import lookup_backend

        compiler = lookup_backend(backend)
    floats = number_positions(example_inputs, fake_inputs)
    if shape is None and not floats and not has_item_reads(gm):
        _no_donated_buffers()
        return compiler(gm, list(example_inputs))
    try:
        return _compile_symbolic(gm, example_inputs, compiler, callable(backend), shape, fake_inputs)
    except Exception as exc:
        from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

        cause = exc if isinstance(exc, GuardOnDataDependentSymNode) else exc.__cause__
        if not isinstance(cause, GuardOnDataDependentSymNode) or not has_float_lerp(gm, list(example_inputs)):
            raise
        # a lerp's float weight: decided on by Inductor's decomposition (float_inputs.lerp_weights)
        return _compile_symbolic(gm, example_inputs, compiler, callable(backend), shape, fake_inputs, True)


def _compile_symbolic(
    gm: fx.GraphModule,
    example_inputs: list[Any],
    compiler: Callable[..., Any],
    own_compiler: bool,
    shape: ShapeInfo | None,
    fake_inputs: list[Any] | None,
    tensor_weights: bool = False,
) -> Callable[..., Any]:
    """Compile inside a TracingContext holding a fake-tensor mode with a ShapeEnv: the one knowing
    the symbolic sizes (`shape`), or one of static sizes for a graph with float inputs."""
    import torch._guards

    # a float input (a changing learning rate) or an int read from data by an earlier graph as a 0-d
    # tensor the graph reads with .item(), compiled in a fake mode with a ShapeEnv (float_inputs.py);
    # static sizes get fakes of static sizes
    mode = shape.mode if shape is not None else static_fake_mode()
    fakes = list(fake_inputs or shape.placeholders) if shape is not None else None
    floats = number_positions(example_inputs, fakes)
    examples, with_floats = list(example_inputs), _unchanged
    if floats:
        gm, fakes, with_floats = with_float_inputs(gm, examples, fakes, mode, tensor_weights)
        examples = [number_tensor(v) if i in floats else v for i, v in enumerate(examples)]
    elif fakes is None:  # ints read from data only (graph/compiled_ints.py): fakes of static sizes
        fakes = static_fakes(mode, examples)
    if own_compiler:
        inputs, wrap = examples, _unchanged
    elif shape is not None:  # the size symbols as inputs of their own, first, as TorchDynamo hands them over
        gm, inputs, wrap = with_size_inputs(gm, fakes, mode.shape_env)
    else:
        inputs, wrap = fakes, _unchanged
    with _symbolic_settings(inputs), torch._guards.tracing(torch._guards.TracingContext(mode)):
        _no_donated_buffers()
        return with_floats(wrap(compiler(gm, inputs)))


def _no_donated_buffers() -> None:
    """Turns AOTAutograd's donated buffers off, for good and for the whole process, before it
    compiles. A backward compiled with them frees the forward's saved tensors as it goes and refuses
    to run with `retain_graph=True` ("This backward function was compiled with non-empty donated
    buffers"), which eager code does without a second thought: `loss.backward(retain_graph=True)`
    and another backward, in the call or by its caller. torch checks the setting again at every
    backward, against what it recorded at compile time (nothing, when it was off), so it cannot be
    switched off for jitlab's compiles alone: a compile with it off and a backward with it on raise
    the same error. It saves memory in the backward only; torch.compile in the same process runs
    without it too (docs/jit.md, "Training")."""
    import torch._functorch.config

    torch._functorch.config.donated_buffer = False


@contextlib.contextmanager
def _symbolic_settings(inputs: list[Any]) -> Iterator[None]:
    """Compiler settings for a graph with symbolic sizes. The backward is compiled now, not on its
    first run: what compiling it assumes about the sizes is then among the ShapeEnv's guards the
    entry checks (read after compiling). And a graph with a backward gets no layout optimisation:
    Inductor on the CPU makes a convolution's saved input channels-last, and the backward then
    asserts the strides of the sizes it was compiled with (static numbers), so the second batch
    size raised in `loss.backward()` ("expected size 9==9, stride 50==72"; torch.compile(dynamic=True)
    does the same with torch 2.13)."""
    import torch._functorch.config

    with contextlib.ExitStack() as stack:
        stack.enter_context(torch._functorch.config.patch(force_non_lazy_backward_lowering=True))
        if torch.is_grad_enabled() and any(isinstance(v, torch.Tensor) and v.requires_grad for v in inputs):
            import torch._inductor.config

            stack.enter_context(torch._inductor.config.patch(layout_optimization=False))
        yield


def _unchanged(compiled: Callable[..., Any]) -> Callable[..., Any]:
    return compiled
