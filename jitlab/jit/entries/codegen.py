"""Builds one cache entry's function: guards, graph call, data checks, side-effect replay, result.

The generated function has the shape

    def entry(args, kwargs):
        try:
            <guard statements: assign sources to locals, `return MISS` on the first failed check>
        except Exception:
            return MISS
        outs = GRAPH(<input tensors>)
        <data-dependent re-checks, only when the graph is free of effects>
        <rebuilt containers, side-effect replay>
        return <the call's result rebuilt from outs>

so a hit costs one Python call plus the graph. Captures with graph breaks get an entry of several
graphs instead (segments.py); both are an `EntryPlan`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
import torch.fx as fx

from jitlab.jit.effects.replay import Effect, ReplayTracer, ValueWriter, render_effects
from jitlab.jit.entries.input_memory import guard_input_memory
from jitlab.jit.entries.plans import (
    MISS,
    SHAPE_GUARDS,
    SHAPE_MARKERS,
    EntryPlan,
    GraphPlan,
    raising_checks,
    shape_marker,
    specialisation_sites,
    specialisations,
)
from jitlab.jit.errors import Unsupported
from jitlab.jit.graph.autocast_nodes import has_autocast_nodes, unwinding
from jitlab.jit.graph.data_values import Speculation, mismatch
from jitlab.jit.graph.shapes import ShapeInfo
from jitlab.jit.graph.size_tensors import read_size_tensors
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.reasons import Reason, ReasonKind


class PlannedTracer(ReplayTracer, Protocol):
    """What planning an entry needs of the tracer, besides rendering values (`ReplayTracer`): the
    capture's effects, replayed by the entry, and its problems (the reason a graph input has no
    source)."""

    @property
    def effects(self) -> list[Effect]: ...

    @property
    def problems(self) -> list[Reason]: ...


class PlannedRecorder(Protocol):
    """What planning an entry reads of the graph recorder (tracing's BreakRecorder: graph/recorder.py's
    `GraphRecorder` with graph/shapes.py's `SymbolicSizes`): the graph, its inputs, constants and
    speculations, what it does to tensors and grad mode, and whether its sizes are symbolic."""

    graph: fx.Graph
    placeholders: list[fx.Node]
    constants: dict[str, Any]
    has_mutation: bool
    has_random: bool
    initial_grad: bool
    grad_enabled: bool
    size_problem: str | None

    @property
    def speculations(self) -> list[Speculation]: ...

    def finish(self, output_nodes: list[fx.Node]) -> None: ...

    def has_symbols(self) -> bool: ...


def plan_entry(
    tracer: PlannedTracer,
    recorder: PlannedRecorder,
    builder: GuardBuilder,
    result: object,
    root: object,
    compiled: bool = False,
) -> EntryPlan:
    """Turn a finished capture into an entry plan; raises Unsupported when it cannot be cached."""
    writer = ValueWriter(builder, tracer)
    effect_lines = render_effects(tracer.effects, writer)
    result_expr = writer.write(result)
    spec_lines: list[str] = []
    prefix_lines: list[str] = []
    if recorder.speculations and (recorder.has_mutation or recorder.has_random):
        # checked before the graph runs, so that a failed check has changed nothing (check_prefix.py)
        prefix_lines = _check_prefix_lines(recorder, builder, tracer)
    elif recorder.speculations:
        for n, spec in enumerate(recorder.speculations):
            idx = ", ".join(f"outs[{writer.output_index(node)}]" for node in spec.nodes)
            check = builder.const(spec.check, "CHK")
            test = mismatch(builder.const, f"{check}({idx})", spec.expected)
            spec_lines.append(f"if {test}: return MISS  # speculation {n}")
    if recorder.has_mutation:
        builder.distinct_tensors()
        if prefix_lines or compiled:
            guard_input_memory(recorder.graph, builder)
    recorder.finish(writer.output_nodes)
    holder = _ConstHolder(recorder.constants)
    inference = compiled and inference_graph(recorder.graph, recorder.initial_grad)
    if recorder.has_symbols():  # `view(b, torch.div(t, w, rounding_mode="trunc"))` (size_tensors.py)
        read_size_tensors(recorder.graph)
    gm = fx.GraphModule(holder, recorder.graph)
    from jitlab.jit.graph.shapes import plan_shapes

    shape = plan_shapes(recorder, gm, builder, rechecked_after=True)
    guard_lines = builder.render()
    example_inputs = [node.meta["example_value"] for node in recorder.placeholders]
    input_vars = []
    for node in recorder.placeholders:
        input_vars.append(_input_var(node, tracer))
    lines = ["def entry(args, kwargs):", "    try:"]
    lines += [f"        {line}" for line in guard_lines] or ["        pass"]
    if shape is not None:
        lines.append(SHAPE_GUARDS)
    lines += ["    except Exception:", "        return MISS"]
    lines += prefix_lines
    graph_at = len(lines)  # the graph call, or the try around it (below)
    lines.append(f"    outs = GRAPH({''.join(v + ', ' for v in input_vars)})")
    if spec_lines:
        lines = _wrap_speculation(lines, spec_lines)
    if inference:  # the graph's own grad-mode switches were taken out: the entry makes them
        setgrad = builder.const(torch._C._set_grad_enabled, "SETGRAD")
        at = graph_at + 1 if spec_lines else graph_at  # the call, inside the speculation's try
        call = lines[at]
        indent = call[: len(call) - len(call.lstrip())]
        lines[at : at + 1] = [
            f"{indent}{setgrad}(False)",
            f"{indent}try:",
            f"    {call}",
            f"{indent}finally:",
            f"{indent}    {setgrad}(True)",
        ]
    if not inference and _switches_grad(recorder.graph):
        lines = _restore_grad_mode(lines, graph_at, builder, recorder.initial_grad, recorder.grad_enabled)
    lines.append("    HITS[0] += 1")
    lines += [f"    {line}" for line in writer.prelude]
    lines += [f"    {line}" for line in effect_lines]
    lines.append(f"    return {result_expr}")
    namespace = dict(builder.constants)
    namespace["MISS"] = MISS
    return EntryPlan(
        source_lines=lines,
        namespace=namespace,
        graphs=[GraphPlan("GRAPH", gm, example_inputs, _fakes(recorder.placeholders, shape))],
        guards=builder.describe(),
        speculations=specialisations(recorder.speculations),
        speculation_sites=specialisation_sites(recorder.speculations),
        checks=raising_checks(recorder.speculations),
        effects=[e.describe() for e in tracer.effects],
        shape=shape,
        shape_note=recorder.size_problem,
        inference=inference,
        speculation_objects=list(recorder.speculations),
        tensor_meta=list(builder.tensor_meta),
        branch_problem=_branch_problem(recorder, example_inputs, bool(prefix_lines), compiled),
        rerun_safe=not (tracer.effects or recorder.has_mutation or recorder.has_random),
        miss_texts=builder.miss_texts(),
    )


def _fakes(placeholders: list[fx.Node], shape: ShapeInfo | None) -> list[object] | None:
    """What the compiler is handed for each graph input with symbolic sizes, in the graph's order:
    the fake-tensor run's inputs leave out the floats it took as constants (a changing global float,
    a learning rate), which the compiler gets as the floats themselves (`ShapeInfo.fake_input`), so
    that the fakes line up with the example inputs (until then a float input with symbolic sizes
    failed the compile with an IndexError, and the graph ran eagerly)."""
    return [shape.fake_input(node) for node in placeholders] if shape is not None else None


def _branch_problem(
    recorder: PlannedRecorder, example_inputs: list[Any], checked_before: bool, compiled: bool
) -> str | None:
    """Why the graph cannot be one arm of a branch merged into one graph (branches.py), or None."""
    if recorder.has_mutation or recorder.has_random or checked_before:
        return "the graph mutates tensors or draws random numbers"
    if has_autocast_nodes(recorder.graph):
        return "the graph enters torch.autocast"
    if getattr(recorder, "symbolic", None) or getattr(recorder, "int_inputs", None):
        return "the graph has symbolic sizes"
    if (
        compiled
        and recorder.initial_grad
        and any(isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs)
    ):
        # torch.cond gives zero gradients (not None) to inputs the branch taken does not use, and
        # outputs requiring grad where eager code's would not (the select of backend "eager" runs
        # the taken arm's operations only, as eager code does)
        return "an input requires grad"
    return None


def inference_graph(graph: fx.Graph, grad_at_start: bool) -> bool:
    """Whether a graph called with gradients on runs every operation with them off (a model that
    wraps its forward in `torch.no_grad()`). Then its grad-mode switches are removed and it is
    compiled for inference, and the entry switches gradients off around the call: compiled as it is,
    the graph would go through the autograd path of the compiler (tens of microseconds per call)."""
    if not grad_at_start:
        return False  # called without gradients: compiled for inference anyway
    switches, grad, ops = [], True, 0
    for node in graph.nodes:
        if node.op == "call_function" and node.target is torch._C._set_grad_enabled:
            grad = node.args[0]
            switches.append(node)
        elif node.op in ("call_function", "call_method", "call_module"):
            if grad:
                return False
            ops += 1
    if not switches or not ops or grad is not True:
        return False
    for node in switches:
        graph.erase_node(node)
    return True


def _input_var(node: fx.Node, tracer: PlannedTracer) -> str:
    """The guard variable holding a graph input. A tensor of unknown origin (met while planning, in
    the return value) has none: then the capture cannot be cached, for the reason the tracer gave."""
    var = node.meta.get("jit_var")
    if var is None:
        if tracer.problems:
            last = tracer.problems[-1]
            raise Unsupported(last.message, last.kind)
        raise Unsupported("a graph input has no source", ReasonKind.UNTRACKED_VALUE)
    return var


def _check_prefix_lines(recorder: PlannedRecorder, builder: GuardBuilder, tracer: PlannedTracer) -> list[str]:
    """Entry lines running the check prefix of a mutating graph and its speculation checks."""
    from jitlab.jit.entries.check_prefix import build_check_prefix, copy_input

    prefix = build_check_prefix(
        recorder.graph, _ConstHolder(recorder.constants), recorder.placeholders, recorder.speculations
    )
    if prefix is None:
        raise Unsupported(
            "a value read from tensor data decides the program and depends on random numbers drawn by a "
            "graph that mutates tensors or draws them (it cannot be checked before the graph runs)",
            ReasonKind.DATA_DEPENDENT,
        )
    run = prefix.gm.forward
    if has_autocast_nodes(prefix.gm.graph):  # a prefix raising inside a region closes it
        run = unwinding(run)
    run = builder.const(run, "PREFIX")
    copy = builder.const(copy_input, "COPY")
    no_grad = builder.const(torch.no_grad, "NO_GRAD")
    names = [_input_var(recorder.placeholders[i], tracer) for i, _ in prefix.inputs]
    args = "".join(
        (f"{copy}({name})" if copied else name) + ", " for name, (_, copied) in zip(names, prefix.inputs)
    )
    lines = [
        "    try:",
        f"        with {no_grad}():",
        f"            pre = {run}({args})",
        "    except Exception:",
    ]
    lines.append("        return MISS")
    for n, (spec, positions) in enumerate(zip(recorder.speculations, prefix.spec_outputs)):
        values = ", ".join(f"pre[{p}]" for p in positions)
        check = builder.const(spec.check, "CHK")
        test = mismatch(builder.const, f"{check}({values})", spec.expected)
        lines.append(f"    if {test}: return MISS  # speculation {n}, before the graph")
    return lines


def _switches_grad(graph: fx.Graph) -> bool:
    return any(n.op == "call_function" and n.target is torch._C._set_grad_enabled for n in graph.nodes)


def _restore_grad_mode(
    lines: list[str], graph_at: int, builder: GuardBuilder, initial: bool, final: bool
) -> list[str]:
    """The graph switches grad mode (`torch.set_grad_enabled(False)` called in the program). A miss
    after the graph ran (a failed re-check, or a graph that raised) must leave the mode the call
    started in, since the call is then captured again or run eagerly from that state; a hit leaves
    the mode the program left, set by the entry itself because a compiled graph does not replay a
    change of torch's global state. `lines[graph_at:]` are the graph call and its re-checks, if any."""
    setgrad = builder.const(torch._C._set_grad_enabled, "SETGRAD")
    miss = builder.const(_GradMiss(initial), "GRADMISS")
    head, tail = lines[:graph_at], lines[graph_at:]
    if tail[0].strip() == "try:":  # _wrap_speculation: the graph call is inside a try already
        tail = [line.replace("return MISS", f"return {miss}()") for line in tail]
        return [*head, *tail, f"    {setgrad}({final})"]
    call = tail[0]
    rest = [line.replace("return MISS", f"return {miss}()") for line in tail[1:]]
    return [
        *head,
        "    try:",
        f"    {call}",
        "    except BaseException:",
        f"        {setgrad}({initial})",
        "        raise",
        *rest,
        f"    {setgrad}({final})",
    ]


class _GradMiss:
    """Called on a miss after a graph that switches grad mode: restores the mode the call started
    in and answers MISS (see _restore_grad_mode)."""

    def __init__(self, initial: bool) -> None:
        self.initial = initial

    def __call__(self) -> Any:
        torch._C._set_grad_enabled(self.initial)
        return MISS


def _wrap_speculation(lines: list[str], spec_lines: list[str]) -> list[str]:
    """The graph may fail when a speculation is wrong: treat a failure like a failed check."""
    call = lines.pop()
    return [*lines, "    try:", f"    {call}", "    except Exception:", "        return MISS"] + [
        f"    {line}" for line in spec_lines
    ]


class EntryFunction(Protocol):
    """A cache entry's generated function, `entry(args, kwargs)`, with its counters: `hits` (calls
    served whole, one item) and `deopts` (per break, the calls that resumed from it)."""

    hits: list[int]
    deopts: list[int]

    def __call__(self, args: tuple, kwargs: dict) -> Any: ...


def build_entry(
    plan: EntryPlan,
    compiled: dict[str, Callable[..., Any]],
    on_deopt: Callable[[EntryFunction, int], None] | None = None,
    as_is: bool = False,
) -> EntryFunction:
    """exec the rendered source with each compiled graph bound to its name (GRAPH, G0, G1...).

    The function gets `hits` (calls served whole) and `deopts` (per break: calls that resumed from it).
    `as_is`: the graphs run as they are (backend "eager"), which matters for symbolic sizes' guards."""
    namespace = dict(plan.namespace)
    namespace.update(compiled)
    hits = [0]
    deopts = [0] * len(plan.breaks)

    def count_deopt(index: int) -> None:
        deopts[index] += 1
        if on_deopt is not None:
            on_deopt(entry, index)

    namespace["HITS"] = hits
    namespace["ON_DEOPT"] = count_deopt
    lines = plan.source_lines
    if plan.shape is not None:  # read now: compiling may have added conditions on the sizes
        from jitlab.jit.graph.shapes import guard_namespace

        namespace.update(guard_namespace())
        lines = list(lines)
        for segment, guard in reversed(plan.shape.placed_guards(compiled=not as_is)):
            marker = shape_marker(segment)
            at = lines.index(marker)
            fail = "return MISS" if segment == 0 else "raise GF"
            lines.insert(at + 1, f"{marker[: len(marker) - len(marker.lstrip())]}if not ({guard}): {fail}")
        lines = [line for line in lines if line.strip() not in SHAPE_MARKERS]
        plan.source_lines = lines
    source = "\n".join(lines)
    code = compile(source, "<jitlab.jit entry>", "exec")
    exec(code, namespace)  # noqa: S102 - generated code, built from the capture only
    entry = namespace["entry"]
    entry.hits = hits
    entry.deopts = deopts
    return entry


class _ConstHolder(fx.GraphModule.__mro__[1]):  # torch.nn.Module
    """Root module holding the non-tensor constants the graph refers to with get_attr."""

    def __init__(self, constants: dict[str, Any]) -> None:
        super().__init__()
        for name, value in constants.items():
            object.__setattr__(self, name, value)
