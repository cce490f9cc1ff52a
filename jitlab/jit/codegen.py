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

so a hit costs one Python call plus the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx

from jitlab.jit.errors import Unsupported
from jitlab.jit.guards import GuardBuilder
from jitlab.jit.replay import ValueWriter, render_effects


class _Miss:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISS"


MISS = _Miss()


@dataclass
class EntryPlan:
    """Everything captured, ready to be rendered once the graph is compiled."""

    source_lines: list[str]
    namespace: dict[str, Any]
    gm: fx.GraphModule
    example_inputs: list[Any]
    guards: list[str]
    speculations: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)


def plan_entry(tracer: Any, recorder: Any, builder: GuardBuilder, result: Any, root: Any) -> EntryPlan:
    """Turn a finished capture into an entry plan; raises Unsupported when it cannot be cached."""
    writer = ValueWriter(builder, tracer)
    effect_lines = render_effects(tracer.effects, writer)
    result_expr = writer.write(result)
    spec_lines: list[str] = []
    prefix_lines: list[str] = []
    if recorder.speculations and (recorder.has_mutation or recorder.has_random):
        # checked before the graph runs, so that a failed check has changed nothing (speculation.py)
        prefix_lines = _check_prefix_lines(recorder, builder, tracer)
    elif recorder.speculations:
        for n, spec in enumerate(recorder.speculations):
            idx = ", ".join(f"outs[{writer.output_index(node)}]" for node in spec.nodes)
            check = builder.const(spec.check, "CHK")
            expected = builder.const(spec.expected, "EXP")
            spec_lines.append(f"if {check}({idx}) != {expected}: return MISS  # speculation {n}")
    if recorder.has_mutation:
        builder.distinct_tensors()
    guard_lines = builder.render()
    recorder.finish(writer.output_nodes)
    holder = _ConstHolder(recorder.constants)
    gm = fx.GraphModule(holder, recorder.graph)
    example_inputs = [node.meta["example_value"] for node in recorder.placeholders]
    input_vars = []
    for node in recorder.placeholders:
        input_vars.append(_input_var(node, tracer))
    lines = ["def entry(args, kwargs):", "    try:"]
    lines += [f"        {line}" for line in guard_lines] or ["        pass"]
    lines += ["    except Exception:", "        return MISS"]
    lines += prefix_lines
    lines.append(f"    outs = GRAPH({''.join(v + ', ' for v in input_vars)})")
    if spec_lines:
        lines = _wrap_speculation(lines, spec_lines)
    lines.append("    HITS[0] += 1")
    lines += [f"    {line}" for line in writer.prelude]
    lines += [f"    {line}" for line in effect_lines]
    lines.append(f"    return {result_expr}")
    namespace = dict(builder.constants)
    namespace["MISS"] = MISS
    return EntryPlan(
        source_lines=lines,
        namespace=namespace,
        gm=gm,
        example_inputs=example_inputs,
        guards=builder.describe(),
        speculations=[s.text for s in recorder.speculations],
        effects=[e.describe() for e in tracer.effects],
    )


def _input_var(node: fx.Node, tracer: Any) -> str:
    """The guard variable holding a graph input. A tensor of unknown origin (met while planning, in
    the return value) has none: then the capture cannot be cached, for the reason the tracer gave."""
    var = node.meta.get("jit_var")
    if var is None:
        raise Unsupported(tracer.problems[-1] if tracer.problems else "a graph input has no source")
    return var


def _check_prefix_lines(recorder: Any, builder: GuardBuilder, tracer: Any) -> list[str]:
    """Entry lines running the check prefix of a mutating graph and its speculation checks."""
    from jitlab.jit.speculation import build_check_prefix, copy_input

    prefix = build_check_prefix(
        recorder.graph, _ConstHolder(recorder.constants), recorder.placeholders, recorder.speculations
    )
    if prefix is None:
        raise Unsupported(
            "a value read from tensor data decides the program and depends on random numbers drawn by a "
            "graph that mutates tensors or draws them (it cannot be checked before the graph runs)"
        )
    run = builder.const(prefix.gm.forward, "PREFIX")
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
        expected = builder.const(spec.expected, "EXP")
        lines.append(
            f"    if {check}({values}) != {expected}: return MISS  # speculation {n}, before the graph"
        )
    return lines


def _wrap_speculation(lines: list[str], spec_lines: list[str]) -> list[str]:
    """The graph may fail when a speculation is wrong: treat a failure like a failed check."""
    call = lines.pop()
    return [*lines, "    try:", f"    {call}", "    except Exception:", "        return MISS"] + [
        f"    {line}" for line in spec_lines
    ]


def build_entry(plan: EntryPlan, compiled: Any) -> Any:
    """exec the rendered source with the compiled graph bound as GRAPH."""
    namespace = dict(plan.namespace)
    namespace["GRAPH"] = compiled
    hits = [0]
    namespace["HITS"] = hits
    source = "\n".join(plan.source_lines)
    code = compile(source, "<jitlab.jit entry>", "exec")
    exec(code, namespace)  # noqa: S102 - generated code, built from the capture only
    entry = namespace["entry"]
    entry.hits = hits
    return entry


class _ConstHolder(fx.GraphModule.__mro__[1]):  # torch.nn.Module
    """Root module holding the non-tensor constants the graph refers to with get_attr."""

    def __init__(self, constants: dict[str, Any]) -> None:
        super().__init__()
        for name, value in constants.items():
            object.__setattr__(self, name, value)
