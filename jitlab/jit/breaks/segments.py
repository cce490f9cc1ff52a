"""Cache entries made of several graphs: the captured graph split at its breaks, and the generated
function that runs graphs, breaks, re-checks, effects and, when a check after a break fails, the
deoptimisation that finishes the call from the break (see book.py and resume.py).

A capture is split at its call breaks, and at its data breaks when a decision on tensor data cannot
be checked before one whole graph runs (codegen's check prefix handles the others). The generated
function has the shape

    def entry(args, kwargs):
        try:
            <guards of segment 0>                       # any failure: MISS (nothing has run yet)
        except Exception:
            return MISS
        n_a, n_b, = G0(v0, v3, )                        # graph of segment 0
        <effects of segment 0>                          # replayed in program order
        s0 = CHK0(n_b)                                  # a data break: the value Python decided on
        if s0 != EXP0: return D0(s0, None, locals())    # ... or MISS if nothing irreversible ran yet
        n_c, = G1(n_a, )
        try:
            b1 = F4(n_c, v2)                            # a call break, run natively
        except BaseException as e:
            return D1(None, e, locals())
        ok = False
        try:
            <guards of segment 2: b1, the objects it was given, every outside value read after it>
            ok = True
        except Exception:
            pass
        if not ok:
            return D1(b1, None, locals())
        ...
        return <result>

where `Dk` rebuilds the interpreted frames at break k and runs the rest of the call (resume.py).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch
import torch.fx as fx

from jitlab.jit.breaks.book import Boundary, BreakBook, CallBreak, DataBreak
from jitlab.jit.breaks.resume import resume
from jitlab.jit.entries.codegen import _ConstHolder
from jitlab.jit.entries.input_memory import shared_memory_check
from jitlab.jit.entries.plans import MISS, BreakInfo, EntryPlan, GraphPlan, shape_marker
from jitlab.jit.errors import Unsupported
from jitlab.jit.graph.autocast_nodes import open_before
from jitlab.jit.graph.data_values import DATA_INT, Speculation, mismatch
from jitlab.jit.graph.fake_run import symbolic_dims
from jitlab.jit.graph.numpy_values import KeyedCheck
from jitlab.jit.guards.builder import _template
from jitlab.jit.reasons import ReasonKind

if TYPE_CHECKING:
    from jitlab.jit.graph.shapes import ShapeInfo

#: a guard builder's `const`: the name the generated code reads an object by
Const = Callable[[object, str], str]

_LOCAL_NAME = re.compile(r"^(args|kwargs|v\d+|g\d+v\d+|n_\w+|b\d+|r\d+)$")
_SET_GRAD = torch._C._set_grad_enabled


class _GuardFailed(Exception):
    """Raised inside a guard block after a break (a plain `return MISS` would be wrong there)."""


GUARD_FAILED = _GuardFailed()


@dataclass
class Piece:
    """One graph of the entry: its module, and the captured nodes it takes and gives back."""

    gm: fx.GraphModule | None
    inputs: list[fx.Node]
    outputs: list[fx.Node]
    effect: bool
    sets_grad: bool


def needs_segments(book: BreakBook) -> bool:
    """Whether this capture must be split: it has a call break."""
    return bool(book.calls)


def has_data_breaks(book: BreakBook) -> bool:
    """Whether Python decided on tensor data at places where the graph can be split (used when a
    decision cannot be checked before the whole graph runs, see jitlab.jit.frontend.driver)."""
    active = {id(s) for s in book.recorder.speculations}
    return any(id(d.spec) in active for d in book.data)


def plan_segments(book: BreakBook, result: object, compiled: bool = False) -> EntryPlan:
    """The entry for a capture with breaks; raises Unsupported when it cannot be made."""
    tracer, recorder = book.tracer, book.recorder
    active = {id(s) for s in recorder.speculations}
    data = [d for d in book.data if id(d.spec) in active]
    for d in data:
        if d.epoch < len(book.calls) and id(d.spec) not in book.calls[d.epoch].active_specs:
            raise Unsupported(
                f"a value read from tensor data at {d.where} is used by Python only after the graph "
                f"break at {book.calls[d.epoch].where}",
                ReasonKind.DATA_DEPENDENT,
            )
        if d.effectful and d.state is None:
            raise Unsupported(
                f"Python decides on tensor data at {d.where} after effects, and the program cannot "
                f"be resumed there ({d.state_problem})",
                ReasonKind.DATA_DEPENDENT,
            )
    boundaries = sorted([*book.calls, *data], key=lambda b: b.seq)
    for k, b in enumerate(boundaries):
        b.position = k  # type: ignore[attr-defined]

    book.render_effects_upto(len(tracer.effects))
    mark = len(book.writer.prelude)
    result_expr = book.writer.write(result)
    result_prelude = book.writer.prelude[mark:]
    checks = []
    for d in data:
        nodes = ", ".join(book.node_name(n) for n in d.spec.nodes)
        value = book.node_name(d.spec.nodes[0]) if _is_shape_check(d.spec) else None
        checks.append((d, nodes, value))

    marks = [b.mark for b in boundaries]
    _no_autocast_across(recorder.graph, boundaries)
    seg_of, pieces = split_graph(recorder, marks, book.needed)
    shape = None
    if recorder.has_symbols():
        from jitlab.jit.graph.shapes import plan_shapes, whole_graph

        shape = plan_shapes(recorder, whole_graph(recorder, _ConstHolder(recorder.constants)), book.builder)
    for index, (_prelude, _lines, nodes) in book.rendered.items():
        segment = _segment_of_effect(index, boundaries)
        late = [n for n in nodes if seg_of.get(n, -1) > segment]
        if late:
            raise Unsupported(
                "an object made during the call is written outside and changed after a graph break",
                ReasonKind.SIDE_EFFECT,
            )
    return _render(book, boundaries, pieces, checks, result_expr, result_prelude, shape, compiled)


def _no_autocast_across(graph: fx.Graph, boundaries: list[Any]) -> None:
    """Refuse a break inside `with torch.autocast(...)`: the code at the break runs under autocast
    in eager code, and after a compiled segment, which runs the casts autocast made when it was
    traced, it would run without (graph/autocast_nodes.py)."""
    ops = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    regions = open_before(ops)
    for b in boundaries:
        if regions[min(b.mark, len(ops))]:
            raise Unsupported(
                f"a graph break at {b.where} inside `with torch.autocast(...)`: the code at the break would run "
                "without autocast",
                ReasonKind.GLOBAL_STATE,
            )


def _is_shape_check(spec: Speculation) -> bool:
    from jitlab.jit.graph.torch_calls import shape_of

    return spec.check is shape_of


def _segment_of_effect(index: int, boundaries: list[Any]) -> int:
    for k, b in enumerate(boundaries):
        if index < b.effects:
            return k
    return len(boundaries)


class SplitRecorder(Protocol):
    """What splitting the recorded graph uses of the graph recorder: the graph and its constants (the
    book's `BookRecorder` has both). tests/jit/test_jit_owned_state.py checks the real recorder."""

    graph: fx.Graph
    constants: dict[str, Any]


def split_graph(
    recorder: SplitRecorder, marks: list[int], needed: dict[fx.Node, None]
) -> tuple[dict[fx.Node, int], list[Piece]]:
    """Split the recorded graph after each mark (a count of operation nodes): one fx graph per
    segment, taking the placeholders and earlier segments' values it uses, giving back the values
    later segments or the entry's code use."""
    graph = recorder.graph
    ops = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    seg_of: dict[fx.Node, int] = {}
    k = 0
    for i, node in enumerate(ops):
        while k < len(marks) and i >= marks[k]:
            k += 1
        seg_of[node] = k
    count = len(marks) + 1
    outputs: list[dict[fx.Node, None]] = [{} for _ in range(count)]
    for node in ops:
        if node.op == "get_attr":
            continue
        for user in node.users:
            if user.op != "output" and seg_of[user] > seg_of[node]:
                outputs[seg_of[node]][node] = None
    for node in needed:
        if node.op not in ("placeholder", "get_attr"):
            outputs[seg_of[node]][node] = None
    holder = _ConstHolder(recorder.constants)
    pieces = []
    for j in range(count):
        members = [n for n in ops if seg_of[n] == j]
        if not members:
            pieces.append(Piece(None, [], [], False, False))
            continue
        g = fx.Graph()
        env: dict[fx.Node, fx.Node] = {}
        inputs: list[fx.Node] = []
        for node in members:
            for arg in node.all_input_nodes:
                if arg in env or (arg.op != "placeholder" and (arg.op == "get_attr" or seg_of[arg] == j)):
                    continue
                env[arg] = g.placeholder(arg.name)
                env[arg].meta.update(arg.meta)
                inputs.append(arg)
        for node in members:
            for arg in node.all_input_nodes:
                if arg.op == "get_attr" and arg not in env:
                    env[arg] = g.get_attr(arg.target)
            env[node] = g.node_copy(node, env.__getitem__)
        outs = list(outputs[j])
        g.output(tuple(env[n] for n in outs))
        gm = fx.GraphModule(holder, g)
        effect = any(n.meta.get("jit_effect") for n in members)
        sets_grad = any(n.op == "call_function" and n.target is _SET_GRAD for n in members)
        pieces.append(Piece(gm, inputs, outs, effect, sets_grad))
    return seg_of, pieces


def _input_expr(node: fx.Node) -> str:
    if node.op == "placeholder":
        return node.meta["jit_var"]
    return f"n_{node.name}"


def _render(book: BreakBook, boundaries: list[Any], pieces: list[Piece], checks: list[Any],
            result_expr: str, result_prelude: list[str], shape: ShapeInfo | None, compiled: bool) -> EntryPlan:  # fmt: skip
    builder0 = book.builder.chain()[-1]
    const = builder0.const
    namespace: dict[str, Any] = {}
    lines = ["def entry(args, kwargs):", "    try:"]
    head = builder0.render()
    if pieces[0].gm is not None and pieces[0].effect:
        head += _distinct(pieces[0], "return MISS", const if compiled else None)
    lines += [f"        {line}" for line in head] or ["        pass"]
    if shape is not None:
        lines.append(shape_marker(0))
    lines += ["    except Exception:", "        return MISS"]
    check_of = {id(d): (nodes, value) for d, nodes, value in checks}
    effects_at = 0
    graphs: list[GraphPlan] = []
    deopt_lines: list[str] = []
    breaks: list[BreakInfo] = []
    final_grad = torch.is_grad_enabled()
    fail_before = "return MISS"  # what a failed check before the next graph does
    for j, piece in enumerate(pieces):
        boundary = boundaries[j] if j < len(boundaries) else None
        if piece.gm is not None:
            name = f"G{j}"
            if j > 0 and piece.effect:
                lines += [
                    f"    {line}" for line in _distinct(piece, fail_before, const if compiled else None)
                ]
            # an int read from tensor data (compiled_ints.py): its value, which compile_graph hands over as a tensor
            examples = [n.meta.get("example_value", n.meta.get(DATA_INT)) for n in piece.inputs]
            fakes = [shape.fake_input(n) for n in piece.inputs] if shape is not None else None
            graphs.append(GraphPlan(name, piece.gm, examples, fakes))
            call = f"{name}({''.join(_input_expr(n) + ', ' for n in piece.inputs)})"
            if piece.outputs:
                lines.append(f"    {''.join(f'n_{n.name}, ' for n in piece.outputs)}= {call}")
            else:
                lines.append(f"    {call}")
            if piece.sets_grad:
                grad = boundary.grad if boundary is not None else final_grad
                lines.append(f"    {const(_SET_GRAD, 'SETGRAD')}({grad})")
        end = boundary.effects if boundary is not None else len(book.tracer.effects)
        for index in range(effects_at, end):
            prelude, effect_lines, _nodes = book.rendered[index]
            lines += [f"    {line}" for line in (*prelude, *effect_lines)]
        effects_at = end
        if boundary is None:
            break
        k = boundary.position
        breaks.append(BreakInfo(_kind(boundary), boundary.reason, boundary.where, k))
        if boundary.state is not None:
            deopt_lines += _deopt(k, boundary, namespace, const)
        if isinstance(boundary, DataBreak):
            nodes, value = check_of[id(boundary)]
            spec_check = boundary.spec.check
            if isinstance(spec_check, KeyedCheck):  # compared by a key: resumed with the value itself
                lines.append(f"    r{k} = {const(spec_check.check, 'CHK')}({nodes})")
                lines.append(f"    s{k} = {const(spec_check.key, 'KEY')}(r{k})")
                value = value or f"r{k}"
            else:
                lines.append(f"    s{k} = {const(spec_check, 'CHK')}({nodes})")
            fail_before = _fail(boundary, value or f"s{k}")
            lines.append(f"    if {mismatch(const, f's{k}', boundary.spec.expected)}: {fail_before}")
        else:
            lines += [f"    {line}" for line in _call_break(boundary, pieces[j + 1 :], const, shape)]
            fail_before = _fail(boundary, boundary.result)
    lines.append("    HITS[0] += 1")
    lines += [f"    {line}" for line in result_prelude]
    lines.append(f"    return {result_expr}")
    namespace.update(builder0.constants)
    namespace["MISS"] = MISS
    namespace["GF"] = GUARD_FAILED
    namespace["RESUME"] = resume
    guards = [
        (f"after break {b.segment - 1}: " if b.segment else "") + g
        for b in reversed(book.builder.chain())
        for g in b.describe()
    ]
    return EntryPlan(
        source_lines=lines + [""] + deopt_lines,
        namespace=namespace,
        graphs=graphs,
        guards=guards,
        speculations=[d.spec.text for d, _n, _v in checks],
        speculation_sites=[d.spec.where for d, _n, _v in checks],
        effects=[e.describe() for e in book.tracer.effects],
        breaks=breaks,
        shape=shape,
        shape_note=book.recorder.size_problem,
        rerun_safe=not book.effectful(),
        miss_texts=builder0.miss_texts(),
    )


def _kind(boundary: object) -> str:
    return "call" if isinstance(boundary, CallBreak) else "data"


def _fail(boundary: Boundary, value: str) -> str:
    """What a failed check right after `boundary` does: MISS if nothing irreversible ran yet,
    else deoptimise from the boundary with `value` (the data value, or the break's result)."""
    if isinstance(boundary, DataBreak) and not boundary.effectful:
        return "return MISS"
    if isinstance(boundary, CallBreak):
        value = boundary.result
    return f"return D{boundary.position}({value}, None, locals())"


def _distinct(piece: Piece, fail: str, const: Const | None = None) -> list[str]:
    """The graph mutates tensors: its tensor inputs must be distinct objects, as when captured; with
    a compiling backend (`const` given), the inputs it changes in place must also share memory as
    when captured (entries/input_memory.py)."""
    tensors = [n for n in piece.inputs if isinstance(n.meta.get("example_value"), torch.Tensor)]
    if len(tensors) < 2:
        return []
    ids = ", ".join(f"id({_input_expr(n)})" for n in tensors)
    lines = [f"if len({{{ids}}}) != {len(tensors)}: {fail}"]
    found = shared_memory_check(piece.inputs, piece.gm.graph) if const is not None and piece.gm else None
    if found is not None:
        check, positions = found
        args = ", ".join(_input_expr(piece.inputs[i]) for i in positions)
        lines.append(f"if not {const(check, 'MEMORY')}({args}): {fail}")
    return lines


def _call_break(brk: CallBreak, later: list[Piece], const: Const, shape: ShapeInfo | None) -> list[str]:
    k = brk.position
    lines = list(brk.call_prelude)
    existing = _tensors_from_before(brk, later)
    symbolic = [n for n, _m in existing if shape is not None and symbolic_dims(shape.values.get(n.name))]
    sizes = "(" + "".join(f"{_input_expr(n)}.shape, " for n in symbolic) + ")"
    if symbolic:  # their sizes vary from call to call: the break must leave them as they were
        lines.append(f"SZ{k} = {sizes}")
    lines.append(f"{const(_SET_GRAD, 'SETGRAD')}({brk.grad})")
    if brk.raised:  # the capture saw it raise: its exception is the result, a return deoptimises
        lines += ["try:", f"    R{k} = {brk.call_expr}", "except Exception as e:", f"    {brk.result} = e",
                  "except BaseException as e:", f"    return D{k}(None, e, locals())",
                  "else:", f"    return D{k}(R{k}, None, locals())"]  # fmt: skip
    else:
        lines += ["try:", f"    {brk.result} = {brk.call_expr}", "except BaseException as e:",
                  f"    return D{k}(None, e, locals())"]  # fmt: skip
    block = brk.builder_after.render()
    if existing:
        templates = [_template(*meta) for _node, meta in existing]
        from torch._C._dynamo.guards import TensorGuards

        from jitlab.jit.graph.fake_run import tensor_guard_args

        dims = [_symbolic_dim_set(shape, n) for n, _m in existing]
        dynamic_sizes, dynamic_strides = tensor_guard_args([m for _n, m in existing], dims)
        checker = TensorGuards(
            *templates, dynamic_dims_sizes=dynamic_sizes, dynamic_dims_strides=dynamic_strides
        )
        args = ", ".join(_input_expr(n) for n, _m in existing)
        block.append(f"if not {const(checker.check, 'TG')}({args}): return MISS")
        if symbolic:
            block.append(f"if {sizes} != SZ{k}: return MISS")
    lines += ["ok = False", "try:"]
    lines += [f"    {_no_miss(line)}" for line in block]
    if shape is not None:
        lines.append(shape_marker(brk.index + 1)[4:])  # indented by the caller
    lines += [
        "    ok = True",
        "except Exception:",
        "    pass",
        "if not ok:",
        f"    return D{k}(None, {brk.result}, locals())"
        if brk.raised
        else f"    return D{k}({brk.result}, None, locals())",
    ]
    return lines


def _symbolic_dim_set(shape: ShapeInfo | None, node: fx.Node) -> frozenset[int]:
    value = shape.values.get(node.name) if shape is not None else None
    if not isinstance(value, torch.Tensor):
        return frozenset()
    return frozenset(d for d, n in enumerate(value.shape) if isinstance(n, torch.SymInt))


def _no_miss(line: str) -> str:
    return line[: -len("return MISS")] + "raise GF" if line.endswith(": return MISS") else line


def _tensors_from_before(brk: CallBreak, later: list[Piece]) -> list[tuple[fx.Node, tuple]]:
    """Tensors the later graphs take that existed before the break (it may have changed them in
    place): their metadata is checked again right after it."""
    out: dict[fx.Node, tuple] = {}
    for piece in later:
        for node in piece.inputs:
            meta = brk.tensor_meta.get(node)
            if meta is not None:
                out[node] = meta
    return list(out.items())


def _names_in(source: str) -> set[str]:
    """The names Python code uses, not words inside its string literals (a frame's locals are written
    as a dict whose keys are the program's own variable names, `'b1'` among them)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {token.string for token in tokens if token.type == tokenize.NAME}


def _deopt(k: int, boundary: Boundary, namespace: dict[str, Any], const: Const) -> list[str]:
    state = boundary.state
    text = "\n".join([*state.prelude, state.frames_expr])
    names = sorted({m for m in _names_in(text) if _LOCAL_NAME.match(m)})
    namespace[f"POINT{k}"] = state.point
    lines = [f"def D{k}(value, throw, L):", f"    ON_DEOPT({k})"]
    lines += [f"    {n} = L[{n!r}]" for n in names]
    lines += [f"    {line}" for line in state.prelude]
    lines.append(f"    return RESUME({state.frames_expr}, POINT{k}, value, throw)")
    lines.append("")
    return lines
