"""The parts of a training step that become graph nodes: a backward pass (`loss.backward()`,
`torch.autograd.backward`, `torch.autograd.grad`), and the reads and writes of `.grad`.

A backward pass inside a captured call is one node of the graph, `backward(loss, ...)`, which runs
torch's autograd engine on the graph values it is given: with the eager backend the whole step (the
forward's operations, the backward, the optimizer's updates) is one GraphModule run as it is, so
every operation runs in the order eager code runs it and the results are bitwise eager's. Compiling
backends get the graph split at these nodes (see frontend/host_split.py): the forward is compiled
(AOTAutograd compiles its backward, which the backward node then runs), the backward node and the
`.grad` reads and writes run between the compiled parts.

Which gradients exist after a backward pass (`p.grad is None` or a tensor) is decided by the graph
(which inputs require grad and reach the loss, all guarded) and by which existed before the call:
the tracer guards the latter (`p.grad is None` before the call) for every `.grad` it reads.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import torch
import torch.fx as fx

from jitlab.jit.graph.argument_generators import is_slot_draw
from jitlab.jit.graph.fused_optimizers import is_fused_optimizer_kernel
from jitlab.jit.graph.recording_tracer import RecordingTracer

if TYPE_CHECKING:
    from jitlab.jit.graph.fresh_storage import FreshStorages

#: the functions whose calls the recorder makes backward nodes of (Tensor.backward reaches the mode
#: as itself, torch.autograd.backward and torch.autograd.grad as themselves)
BACKWARD_FUNCTIONS = (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad)


def is_backward(func: object) -> bool:
    """Whether `func`, a function the recorder's mode receives, is a backward pass."""
    return any(func is f for f in BACKWARD_FUNCTIONS)


def get_grad(tensor: torch.Tensor) -> torch.Tensor | None:
    """`tensor.grad`, as a graph operation (a backward pass before it may have set it)."""
    return tensor.grad


def set_grad(tensor: torch.Tensor, value: torch.Tensor | None) -> None:
    """`tensor.grad = value`, as a graph operation (`zero_grad(set_to_none=True)`, clipping code)."""
    tensor.grad = value


#: graph operations that run on the host between compiled parts (frontend/host_split.py)
HOST_FUNCTIONS = (*BACKWARD_FUNCTIONS, get_grad, set_grad)


def is_host_training_op(node: fx.Node) -> bool:
    """Whether the fx node is a backward pass or a `.grad` read or write: what it gives cannot be
    computed again on copies of the inputs (a check prefix, entries/check_prefix.py)."""
    return node.op == "call_function" and any(node.target is f for f in HOST_FUNCTIONS)


class GradPresence:
    """Whether each tensor the graph knows had a `.grad` when the current segment of the capture
    began (the call's start, or the last graph break), and whose `.grad` the call wrote since.

    A `.grad` read during the capture gives a value the program decides on (`if p.grad is not
    None`); a cache hit repeats those decisions, so the state they depend on is guarded: the
    presence of `.grad` at the segment's start, for every tensor whose `.grad` was read and not
    written before. The gradients a backward pass adds follow from the graph, which the guards fix."""

    def __init__(self) -> None:
        self._had: dict[int, tuple[torch.Tensor, bool]] = {}
        self._written: set[int] = set()
        self._guarded: set[int] = set()
        self.backward_lines: list[str] = []  # where the capture's backward passes are (explain's note)

    def note(self, tensor: torch.Tensor) -> None:
        """Remember whether `tensor` has a `.grad` now, if it is not remembered yet."""
        if id(tensor) not in self._had:
            if not tensor.is_leaf and not tensor.retains_grad:
                self._had[id(tensor)] = (tensor, False)  # autograd fills no .grad of it
                return
            with torch._C.DisableTorchFunction():  # not a read of the program's: no node, no guard
                self._had[id(tensor)] = (tensor, tensor.grad is not None)

    def note_all(self, tensors: Iterable[object]) -> None:
        for tensor in tensors:
            if isinstance(tensor, torch.Tensor) and tensor.is_leaf:  # only leaves get a .grad
                self.note(tensor)

    def new_segment(self, tensors: Iterable[object]) -> None:
        """A graph break ran code the capture cannot see: the presence is taken again, now."""
        self._had.clear()
        self._written.clear()
        self._guarded.clear()
        self.note_all(tensors)

    def written(self, tensor: torch.Tensor) -> None:
        self._written.add(id(tensor))

    def guard_read(self, tracer: RecordingTracer, tensor: torch.Tensor) -> None:
        """`tensor.grad` is read: guard the presence it had at the segment's start (see above)."""
        key = id(tensor)
        if key in self._written or key in self._guarded:
            return
        known = self._had.get(key)
        source = tracer.source_of(tensor)
        if known is None or known[0] is not tensor or source is None or not tracer.is_outside(tensor):
            return  # a tensor the call made: its gradient follows from the graph
        self._guarded.add(key)
        tracer.builder.expr(source, "{v}.grad is None", not known[1])


def runs_backward_hooks(args: tuple, kwargs: dict, limit: int = 100_000) -> bool:
    """Whether a backward pass from the tensors among `args` and `kwargs` reaches hooks: tensor hooks
    of leaves (`p.register_hook`, `register_post_accumulate_grad_hook`) or a module's backward hooks
    (their `BackwardHookFunction` nodes). Those are user code run natively inside autograd, so such a
    backward pass runs at a graph break, and what is read after it is guarded anew."""
    with torch._C.DisableTorchFunction():  # the capture's look, not the program's: nothing recorded
        return _reaches_hooks([t.grad_fn for t in _tensors_in((args, kwargs))], limit)


def _reaches_hooks(stack: list[Any], limit: int) -> bool:
    seen: set[Any] = set()
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if len(seen) > limit:
            return True  # too large to look through: take the safe side
        variable = getattr(fn, "variable", None)  # AccumulateGrad: the leaf
        if variable is not None and (
            variable._backward_hooks or getattr(variable, "_post_accumulate_grad_hooks", None)
        ):
            return True
        if "BackwardHookFunction" in fn.name():
            return True
        stack.extend(next_fn for next_fn, _ in fn.next_functions)
    return False


class _QuietProfile:
    """While the backward node runs during the capture: the user code it runs (custom Functions'
    backward) is no user code run natively by surprise (the break tracer's profile net is off in a
    break, which this borrows)."""

    def __init__(self, tracer: RecordingTracer) -> None:
        self.tracer = tracer if hasattr(tracer, "in_break") else None

    def __enter__(self) -> None:
        if self.tracer is not None:
            self.tracer.in_break += 1

    def __exit__(self, *exc: object) -> None:
        if self.tracer is not None:
            self.tracer.in_break -= 1


class TrainingRecorder(Protocol):
    """What recording a training node uses of the graph recorder (recorder.py, which imports this
    module); tests/jit/test_jit_owned_state.py checks that the real recorder has every member."""

    tracer: RecordingTracer
    graph: fx.Graph
    grads: GradPresence
    node_of: dict[int, tuple[torch.Tensor, fx.Node]]
    fresh: FreshStorages
    op_count: int
    has_mutation: bool

    def pause(self) -> contextlib.AbstractContextManager[None]: ...

    def node_for(self, tensor: torch.Tensor) -> fx.Node: ...

    def graph_arg(self, value: object) -> Any: ...

    def bind(self, out: object, node: fx.Node, shape_check: bool, roots: frozenset[Any]) -> None: ...

    def sync_grad_mode(self) -> None: ...


def _tensors_in(value: object) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_in(v)]
    return []


def record_backward(recorder: TrainingRecorder, func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Run a backward pass during a capture and record it as one node; its result (None, or the
    gradients of `torch.autograd.grad`) is bound to the node."""
    recorder.sync_grad_mode()
    recorder.grads.note_all(t for t, _node in recorder.node_of.values())  # before it adds gradients
    # no hooks (runs_backward_hooks): the user code it may run is custom autograd Functions' backward,
    # which the node runs on every call as eager code does (not code run natively by surprise)
    quiet = _QuietProfile(recorder.tracer)
    with quiet, recorder.pause():
        out = func(*args, **kwargs)
    node = recorder.graph.call_function(
        func, recorder.graph_arg(tuple(args)), recorder.graph_arg(dict(kwargs))
    )
    recorder.grads.backward_lines.append(recorder.tracer.running_line() or "?")
    recorder.op_count += 1
    recorder.has_mutation = True  # gradients accumulate into tensors that outlive the call
    recorder.fresh.state_changed = True
    if out is not None:
        recorder.bind(out, node, False, frozenset())
    return out


def record_get_grad(recorder: TrainingRecorder, tensor: torch.Tensor) -> torch.Tensor | None:
    """`tensor.grad` read during a capture: a node of the graph when it is a tensor."""
    recorder.grads.guard_read(recorder.tracer, tensor)
    with recorder.pause():
        value = tensor.grad
    if value is None:
        return None
    node = recorder.graph.call_function(get_grad, (recorder.node_for(tensor),))
    recorder.bind(value, node, False, frozenset())
    return value


def record_set_grad(recorder: TrainingRecorder, tensor: torch.Tensor, value: torch.Tensor | None) -> None:
    """`tensor.grad = value` during a capture, recorded as a node."""
    target = recorder.node_for(tensor)
    new = recorder.node_for(value) if isinstance(value, torch.Tensor) else None
    recorder.grads.note(tensor)
    recorder.grads.written(tensor)
    with recorder.pause():
        tensor.grad = value
    recorder.sync_grad_mode()
    recorder.graph.call_function(set_grad, (target, new))
    recorder.op_count += 1
    recorder.has_mutation = True
    recorder.fresh.state_changed = True


def training_parts(graph: fx.Graph, where: list[str]) -> str | None:
    """The parts of a training step captured in `graph` (an fx graph), as explain() notes them: the
    operations before the first backward pass (the forward), the backward passes with their lines
    (`where`), and the operations after (the optimizer's update, gradient clipping, `.grad`
    writes); None when the graph holds no backward pass."""
    parts: list[int] = [0]
    for node in graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        if node.op == "call_function" and is_backward(node.target):
            parts.append(0)
        else:
            parts[-1] += 1
    if len(parts) == 1:
        return None
    lines = ", ".join(where) if where else "?"
    return (
        f"training step: forward {parts[0]} operations, {len(parts) - 1} backward pass(es) as graph "
        f"nodes (at {lines}), then {sum(parts[1:])} operations (optimizer update, gradient clipping, "
        ".grad reads and writes)"
    )


def is_host(node: fx.Node, host: set[fx.Node], kept_draws: bool = False) -> bool:
    """Whether `node` runs on the host between compiled parts; `kept_draws`: also a draw from a
    generator the graph keeps (for symbolic sizes, `draws_from_kept_generator`)."""
    if kept_draws and draws_from_kept_generator(node):
        return True
    if node.op != "call_function":
        return False
    target = node.target
    if any(target is f for f in HOST_FUNCTIONS) or target is torch._C._set_grad_enabled:
        return True
    if is_fused_optimizer_kernel(target):  # no compiler takes it: fused_optimizers.py
        return True
    if is_slot_draw(target):  # the call's own generator, put in its slot: argument_generators.py
        return True
    if "_record_function_" in (getattr(target, "__name__", "") or "") or str(target).startswith("profiler."):
        return True  # a profiler range (Optimizer.step's): its handle is no tensor
    return target is operator.getitem and isinstance(node.args[0], fx.Node) and node.args[0] in host


def draws_from_kept_generator(node: fx.Node) -> bool:
    """Whether `node` draws from a generator the graph keeps (`torch.randn(s, generator=G)`, G kept
    by identity). With symbolic sizes it is not handed to a compiler: AOTAutograd's run of
    `randn(size, generator=G)` takes no symbolic size ("SymIntArrayRef expected to contain only
    concrete integers"). With static sizes the compiler takes it, as before: cutting the graph
    there would only add parts (a sampler's time per call with Inductor did not measurably change
    either way, in interleaved runs)."""
    generator = node.kwargs.get("generator")
    return isinstance(generator, fx.Node) and generator.op == "get_attr"


def has_host_nodes(gm: fx.GraphModule | fx.Graph, kept_draws: bool = False) -> bool:
    """Whether a graph holds host operations (a backward pass, an optimizer's bookkeeping): a
    compiler gets its tensor operations part by part (frontend/host_split.py). `kept_draws`: as
    for `is_host`."""
    graph = gm if isinstance(gm, fx.Graph) else gm.graph
    return any(is_host(node, set(), kept_draws) for node in graph.nodes)


def host_nodes(graph: fx.Graph, kept_draws: bool = False) -> set[fx.Node]:
    """The nodes of `graph` that run on the host (`is_host`), the results taken from them included."""
    host: set[fx.Node] = set()
    for node in graph.nodes:
        if is_host(node, host, kept_draws):
            host.add(node)
    return host
