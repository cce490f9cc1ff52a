"""Both outcomes of a Python branch on tensor data in one graph, instead of one entry per outcome.

`if x.sum() > 0:` is a speculation (jitlab.jit.graph.recorder): the entry is specialised on the outcome it saw and a
call with the other outcome is captured again, giving a second entry. When the two entries differ
*only* in that decision, they are merged into one graph that computes the condition and runs the
right arm inside the graph (`torch.ops.higher_order.cond`, which the compilers see as control flow;
with backend "eager", whose graph runs as it is, a plain select between the two arm graphs):

    prefix (the operations before the decision, the same in both captures)
    pred = <the value the branch decided on>
    outs = cond(pred, arm_true, arm_false, operands)   # each arm: its capture's operations after it

The merge is made only when it cannot change a result: the same guards and the same Python after the
graph (result, effects, other re-checks: the same code with the same constants), the same operations
before the decision, arms without tensor mutation, random numbers, grad-mode switches or inputs
requiring grad (torch.cond would give zero gradients to inputs the branch taken does not use, where
eager code leaves them None), arm outputs with the same shapes and dtypes that are no input or
operation before the decision (torch.cond copies such outputs), and a merged graph that reproduces
both captures' outputs on their own inputs. Otherwise both entries stay, and `explain()` keeps
listing the specialisation.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn

from jitlab.jit.entries.plans import (
    EntryPlan,
    GraphPlan,
    raising_checks,
    specialisation_sites,
    specialisations,
)
from jitlab.jit.graph.data_values import Speculation

_VALUE_TYPES = (int, float, str, bool, type(None), torch.dtype, torch.device, torch.Size)


class NoMerge(Exception):
    """The two entries cannot be merged; the message says why (kept for tests and debugging)."""


def select_arm(
    pred: object, arm_true: Callable[..., Any], arm_false: Callable[..., Any], operands: tuple
) -> Any:
    """What `cond` does, as plain Python: the graph of backend "eager" runs as it is."""
    return arm_true(*operands) if pred else arm_false(*operands)


def merge_branches(old: EntryPlan, new: EntryPlan, compiled: bool) -> tuple[EntryPlan, str]:
    """One plan running both `old` and `new`, which differ only in the outcome of one decision on
    tensor data, and a note for `explain()`; raises NoMerge when that cannot be done exactly."""
    for plan in (old, new):
        if plan.branch_problem is not None:
            raise NoMerge(plan.branch_problem)
        if len(plan.graphs) != 1 or plan.breaks or plan.shape is not None:
            raise NoMerge("not a single graph with static sizes")
    if old.inference != new.inference or old.guards != new.guards:
        raise NoMerge("different guards")
    k = _the_decision(old.speculation_objects, new.speculation_objects)
    lines = _same_code(old, new, k)
    spec_old, spec_new = old.speculation_objects[k], new.speculation_objects[k]
    gm = _merged_graph(old.graphs[0], new.graphs[0], spec_old, spec_new, compiled)
    _validate(gm, old.graphs[0], new.graphs[0])
    specs = [s for j, s in enumerate(old.speculation_objects) if j != k]
    text = spec_old.text
    for suffix in (" is True", " is False", " == True", " == False"):
        text = text.removesuffix(suffix)
    text = text.replace("__bool__(...)", "the truth of a tensor")
    how = "torch.cond" if compiled else "an in-graph select"
    note = f"both outcomes of the branch on {text} run in one graph ({how})"
    plan = EntryPlan(
        source_lines=lines,
        namespace=dict(old.namespace),
        graphs=[GraphPlan(old.graphs[0].name, gm, list(old.graphs[0].example_inputs))],
        guards=list(old.guards),
        speculations=specialisations(specs),
        speculation_sites=specialisation_sites(specs),
        checks=raising_checks(specs),
        effects=list(old.effects),
        inference=old.inference,
        speculation_objects=specs,
        branch_problem="already merged",
        rerun_safe=old.rerun_safe and new.rerun_safe,
        miss_texts=old.miss_texts,
    )
    return plan, note


def _the_decision(old: list[Any], new: list[Any]) -> int:
    """The index of the one speculation the two captures decided differently (a truth decision)."""
    if len(old) != len(new) or not old:
        raise NoMerge("different speculations")
    differ = [j for j, (a, b) in enumerate(zip(old, new)) if a.text != b.text]
    if len(differ) != 1:
        raise NoMerge("more than one decision differs")
    k = differ[0]
    a, b = old[k], new[k]
    if type(a.expected) is not bool or type(b.expected) is not bool or a.expected == b.expected:
        raise NoMerge("the decision is not a truth value")
    if a.truth is None or b.truth is None:
        raise NoMerge("the decision is not the truth of one graph value")
    return k


def _same_code(old: EntryPlan, new: EntryPlan, k: int) -> list[str]:
    """The entry code without decision `k`'s re-check; the rest must be the same in both, with the
    same constants (then the result, effects and other re-checks read the graph outputs alike)."""
    marker = f"# speculation {k}"

    def without(lines: list[str]) -> list[str]:
        kept = [line for line in lines if not line.endswith(marker)]
        if len(kept) != len(lines) - 1:
            raise NoMerge("the decision is checked before the graph")
        return kept

    a, b = without(old.source_lines), without(new.source_lines)
    # constants are numbered in the order a capture named them: compare the code up to that numbering
    canon_a, names_a = _canonical(a, old.namespace)
    canon_b, names_b = _canonical(b, new.namespace)
    if canon_a != canon_b or len(names_a) != len(names_b):
        raise NoMerge("different code around the graph")
    same_tensor_guard = old.tensor_meta == new.tensor_meta
    for name_a, name_b in zip(names_a, names_b):
        x, y = old.namespace[name_a], new.namespace[name_b]
        if not (
            _same_value(x, y)
            or (same_tensor_guard and _tensor_guard(x) and _tensor_guard(y))
            or _same_recheck(x, y)
        ):
            raise NoMerge(f"different constant {name_a}")
    return a


_NAME = re.compile(r"\b[A-Za-z_][A-Za-z_0-9]*\b")


def _canonical(lines: list[str], namespace: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The lines with each namespace name replaced by its order of first use, and those names."""
    order: dict[str, str] = {}

    def rename(match: re.Match) -> str:
        word = match.group(0)
        if word not in namespace:
            return word
        return order.setdefault(word, f"@{len(order)}")

    return [_NAME.sub(rename, line) for line in lines], list(order)


def _same_recheck(a: object, b: object) -> bool:
    """Two re-checks of a decision on tensor data made by jitlab.jit.graph.recorder (`check(*tensors)` closures whose
    defaults are the call's arguments, the tensors' positions, keywords and the function): the same
    when all but the tensors, which the re-check replaces, are the same."""
    code = getattr(a, "__code__", None)
    if code is None or code is not getattr(b, "__code__", None) or code.co_name != "check":
        return False
    da, db = a.__kwdefaults__ or {}, b.__kwdefaults__ or {}
    keys = ("_base", "_pos", "_kw", "_func")
    if set(da) != set(keys) or set(db) != set(keys):
        return False
    (base_a, pos_a, kw_a, func_a), (base_b, pos_b, kw_b, func_b) = ([d[k] for k in keys] for d in (da, db))
    if func_a is not func_b or pos_a != pos_b or len(base_a) != len(base_b) or not _same_args(kw_a, kw_b):
        return False
    replaced = {i for _, i in pos_a}
    return all(_same_args(x, y) for i, (x, y) in enumerate(zip(base_a, base_b)) if i not in replaced)


def _tensor_guard(value: object) -> bool:
    """The check of torch's TensorGuards (one per capture, built from the same metadata when the
    captures' `tensor_meta` are equal)."""
    return type(getattr(value, "__self__", None)).__name__ == "TensorGuards"


def _same_value(a: object, b: object) -> bool:
    if a is b:
        return True
    if type(a) is not type(b) or not isinstance(a, (*_VALUE_TYPES, tuple)):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return bool(a == b)


# ---------------------------------------------------------------------------------------- the graph
def _ops(gm: fx.GraphModule) -> tuple[list[fx.Node], list[fx.Node], fx.Node]:
    nodes = list(gm.graph.nodes)
    places = [n for n in nodes if n.op == "placeholder"]
    output = next(n for n in nodes if n.op == "output")
    return places, [n for n in nodes if n.op not in ("placeholder", "output")], output


def _merged_graph(
    old: GraphPlan, new: GraphPlan, spec_old: Speculation, spec_new: Speculation, compiled: bool
) -> fx.GraphModule:
    places_a, ops_a, out_a = _ops(old.gm)
    places_b, ops_b, out_b = _ops(new.gm)
    if len(places_a) != len(places_b) or any(
        a.meta.get("jit_var") != b.meta.get("jit_var") for a, b in zip(places_a, places_b)
    ):
        raise NoMerge("different graph inputs")
    if spec_old.truth not in ops_a or spec_new.truth not in ops_b:
        raise NoMerge("the decision is no operation of the graph")
    cut = ops_a.index(spec_old.truth) + 1
    if ops_b.index(spec_new.truth) + 1 != cut:
        raise NoMerge("different operations before the decision")
    b_to_a: dict[fx.Node, fx.Node] = dict(zip(places_b, places_a))
    for a, b in zip(ops_a[:cut], ops_b[:cut]):
        if not _same_node(a, b, b_to_a, old.gm, new.gm):
            raise NoMerge("different operations before the decision")
        b_to_a[b] = a
    before = set(places_a) | set(ops_a[:cut])
    arm_a, arm_b = ops_a[cut:], ops_b[cut:]
    for node in (*arm_a, *arm_b):
        if node.op == "call_function" and node.target is torch._C._set_grad_enabled:
            raise NoMerge("an arm switches grad mode")
    outs_a, outs_b = out_a.args[0], out_b.args[0]
    if len(outs_a) != len(outs_b):
        raise NoMerge("different graph outputs")
    passed, armed = [], []  # outputs computed before the decision / by the arms
    for i, (a, b) in enumerate(zip(outs_a, outs_b)):
        mapped = b_to_a.get(b)
        if a in before or mapped is not None:
            if mapped is not a:
                raise NoMerge("an arm returns a value computed before the decision")
            passed.append(i)
        else:
            _same_meta(a, b, compiled)
            armed.append(i)
    if not armed:
        raise NoMerge("the arms compute no graph output")
    operands = _operands(arm_a, before, arm_b, b_to_a)
    true_is_old = spec_old.expected is True
    arms = {}
    for arm, ops, outs, gm, mapping in (
        ("old", arm_a, outs_a, old.gm, {}),
        ("new", arm_b, outs_b, new.gm, b_to_a),
    ):
        arms[arm] = _arm_module(gm, ops, [outs[i] for i in armed], operands, mapping)
    return _outer(
        old.gm, places_a, ops_a[:cut], spec_old.truth, operands, arms, true_is_old, outs_a, armed, compiled
    )


def _same_node(a: fx.Node, b: fx.Node, b_to_a: dict, gm_a: fx.GraphModule, gm_b: fx.GraphModule) -> bool:
    if a.op != b.op:
        return False
    if a.op == "get_attr":
        return _same_constant(getattr(gm_a, a.target), getattr(gm_b, b.target))
    if a.target is not b.target and a.target != b.target:
        return False
    mapped = fx.node.map_arg((b.args, b.kwargs), lambda n: b_to_a.get(n, n))
    return _same_args(mapped, (a.args, a.kwargs))


def _same_args(a: object, b: object) -> bool:
    if isinstance(a, fx.Node) or isinstance(b, fx.Node):
        return a is b
    if isinstance(a, (tuple, list)):  # fx's immutable_list is a list
        return (
            isinstance(b, tuple) == isinstance(a, tuple)
            and isinstance(b, (tuple, list))
            and len(a) == len(b)
            and all(_same_args(x, y) for x, y in zip(a, b))
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_args(a[k], b[k]) for k in a)
    if isinstance(a, slice):
        return type(b) is slice and _same_args((a.start, a.stop, a.step), (b.start, b.stop, b.step))
    return _same_value(a, b) or _same_constant(a, b)


def _same_constant(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and a.device == b.device
            and a.requires_grad == b.requires_grad
            and bool(torch.equal(a, b))
        )
    return _same_value(a, b)


def _same_meta(a: fx.Node, b: fx.Node, compiled: bool) -> None:
    """torch.cond needs arm outputs alike, requires_grad included; the select of backend "eager"
    returns the taken arm's own tensors, so there requires_grad may differ as in eager code."""
    ta, tb = a.meta.get("example_value"), b.meta.get("example_value")
    if not isinstance(ta, torch.Tensor) or not isinstance(tb, torch.Tensor):
        raise NoMerge("an arm returns a Python value")
    if (ta.shape, ta.dtype, ta.device, ta.layout) != (tb.shape, tb.dtype, tb.device, tb.layout):
        raise NoMerge("the arms return tensors of different shapes or types")
    if compiled and ta.requires_grad != tb.requires_grad:
        raise NoMerge("one arm's output requires grad, the other's does not")


def _operands(arm_a: list[fx.Node], before: set, arm_b: list[fx.Node], b_to_a: dict) -> list[fx.Node]:
    """The values from before the decision that the arms use (in the old graph's nodes), in order."""
    used: dict[fx.Node, None] = {}
    for ops, mapping in ((arm_a, None), (arm_b, b_to_a)):
        inside = set(ops)
        for node in ops:
            for arg in node.all_input_nodes:
                if arg in inside:
                    continue
                outer = arg if mapping is None else mapping.get(arg)
                if outer is None or outer not in before:
                    raise NoMerge("an arm uses a value it cannot be given")
                used[outer] = None
    for node in used:
        if not isinstance(node.meta.get("example_value"), torch.Tensor):
            raise NoMerge("an arm uses a Python value computed from tensor data")
    return list(used)


def _arm_module(
    gm: fx.GraphModule, ops: list[fx.Node], outs: list[fx.Node], operands: list[fx.Node], mapping: dict
) -> fx.GraphModule:
    """One arm as its own graph: the operands as inputs, the arm's operations, its outputs."""
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    to_outer = {v: k for k, v in mapping.items()} if mapping else {}
    for n, operand in enumerate(operands):
        place = graph.placeholder(f"operand_{n}")
        place.meta = dict(operand.meta)
        env[to_outer.get(operand, operand)] = place
    for node in ops:
        env[node] = graph.node_copy(node, lambda n: env[n])
    graph.output(tuple(env[n] for n in outs))
    return fx.GraphModule(gm, graph)


def _outer(
    gm: fx.GraphModule,
    places: list[fx.Node],
    prefix: list[fx.Node],
    truth: fx.Node,
    operands: list[fx.Node],
    arms: dict[str, fx.GraphModule],
    true_is_old: bool,
    outs: tuple,
    armed: list[int],
    compiled: bool,
) -> fx.GraphModule:
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    root = nn.Module()
    for node in places:
        env[node] = graph.node_copy(node)
    for node in prefix:
        if node.op == "get_attr":
            setattr(root, node.target, getattr(gm, node.target))
        env[node] = graph.node_copy(node, lambda n: env[n])
    pred = env[truth]
    value = truth.meta.get("example_value")
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise NoMerge("the decision is the truth of a tensor with several elements")
        if value.dtype != torch.bool:
            pred = graph.call_function(torch.ne, (pred, 0))
        pred = graph.call_method("reshape", (pred, ()))
    elif compiled:
        raise NoMerge("the decision is a Python value, which torch.cond cannot take")
    root.arm_true = arms["old"] if true_is_old else arms["new"]
    root.arm_false = arms["new"] if true_is_old else arms["old"]
    target = torch.ops.higher_order.cond if compiled else select_arm
    args = (pred, graph.get_attr("arm_true"), graph.get_attr("arm_false"), tuple(env[o] for o in operands))
    branch = graph.call_function(target, args)
    results = {i: graph.call_function(operator.getitem, (branch, n)) for n, i in enumerate(armed)}
    for i in armed:
        results[i].meta["example_value"] = outs[i].meta.get("example_value")
    graph.output(tuple(results[i] if i in results else env[o] for i, o in enumerate(outs)))
    return fx.GraphModule(root, graph)


def _validate(gm: fx.GraphModule, old: GraphPlan, new: GraphPlan) -> None:
    """The merged graph must give each capture's outputs on that capture's inputs."""
    for plan in (old, new):
        inputs = list(plan.example_inputs)
        try:
            with torch.no_grad():
                want = plan.gm(*inputs)
                got = gm(*inputs)
        except Exception as exc:
            raise NoMerge(f"the merged graph fails: {type(exc).__name__}: {exc}") from None
        if len(want) != len(got) or not all(_equal(a, b) for a, b in zip(want, got)):
            raise NoMerge("the merged graph gives other values")


def _equal(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and a.stride() == b.stride()
            and bool(torch.equal(a, b) or torch.allclose(a, b, rtol=0, atol=0, equal_nan=True))
        )
    return type(a) is type(b) and (a == b or a != a and b != b)
