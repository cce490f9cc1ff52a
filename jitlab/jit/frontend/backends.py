"""Compiling a captured `torch.fx.GraphModule` with the chosen backend.

"eager" runs the GraphModule's generated `forward` directly. A name is looked up in torch._dynamo's
backend registry (the same compilers `torch.compile(backend=...)` uses, "inductor" included) and
called with the GraphModule and example inputs; the guards of `jitlab.jit` replace Dynamo's, so
the compiled callable is called directly. A callable is used as such: `backend(gm, example_inputs)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

from jitlab.errors import UserError
from jitlab.jit.frontend.host_split import compile_split
from jitlab.jit.graph.training_nodes import has_host_nodes

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
    shape: Any = None,
    fake_inputs: list[Any] | None = None,
) -> Callable[..., Any]:
    """The callable that runs the graph: `compiled(*inputs) -> tuple of outputs`.

    With symbolic sizes (`shape`, a shapes.ShapeInfo), the compiler runs inside a TracingContext
    holding the fake-tensor mode whose ShapeEnv knows the symbols, as TorchDynamo calls it: named
    backends get the fake inputs (symbolic sizes), a callable backend the real ones."""
    if backend == "eager":
        return gm.forward
    if has_host_nodes(gm):  # a training step: its tensor operations are compiled part by part
        if shape is not None:
            raise ValueError("a graph with a backward pass is compiled for static sizes only")
        return compile_split(gm, lambda part, inputs: compile_graph(part, inputs, backend))
    if callable(backend):
        compiler = backend
    else:
        import torch._dynamo

        compiler = torch._dynamo.lookup_backend(backend)
    if shape is None:
        return compiler(gm, list(example_inputs))
    import torch._guards

    inputs = list(example_inputs) if callable(backend) else list(fake_inputs or shape.placeholders)
    with torch._guards.tracing(torch._guards.TracingContext(shape.mode)):
        return compiler(gm, inputs)
