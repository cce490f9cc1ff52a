"""Symbolic sizes: one cache entry for every batch size (what TorchDynamo calls automatic dynamic
shapes).

The first capture of a call is specialised on every size. When a later call misses because an input
has other sizes (same rank), the next capture makes those dimensions *symbolic* (`ShapeHistory`):

- a size Python reads (`x.shape[0]`, `x.size(1)`, `len(x)`, `x.numel()`) stays a graph value (a
  `size` node; a `DataInt` while capturing), and arithmetic on it too, so `x.view(B, -1)`,
  `torch.zeros(B, d)` or `h.reshape(B * T, C)` are recorded with the size, not its value;
- a comparison of such a size (`if B > 1`) becomes a *fact*: the outcome the capture took, checked
  as a guard on the inputs' sizes (`B > 1`), not the value; any other read by Python (`range(T)`,
  an index, a dict key, code the interpreter runs natively reading `x.shape`) fixes the value (a
  guard `T == 7`, which specialises that dimension again);
- after the capture, the graph is run once more on fake tensors whose symbolic dimensions come from
  a `ShapeEnv` (`retrace`). It records the relations the graph's operations assume: equal sizes
  (broadcasting, matmul), divisibility (`view`), sizes >= 2 (TorchDynamo's 0/1 specialisation: a
  size-0 or size-1 input gets an entry of its own); the facts are checked there too. The guards it
  produces (`ShapeEnv.produce_guards`) are added to the entry, after the tensor guards (which skip
  the symbolic sizes and strides, and check that such inputs are contiguous).
- compiling backends get the graph with those fake inputs under a `TracingContext`, as TorchDynamo
  hands them over, so Inductor generates kernels for every size.

A graph that cannot be run on fake tensors (data-dependent operations, Python values read from
tensor data) keeps static sizes. With call breaks, a break's result is an input like the others (its
guards go to the guard block after the break, `ShapeInfo.placed_guards`).
"""

from __future__ import annotations

import contextlib
import operator
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx
import torch.nn as nn

from jitlab.jit.errors import Unsupported
from jitlab.jit.graph.data_values import SIZE, DataInt, Speculation
from jitlab.jit.graph.dynamic_ints import IntInput, int_fake, pin_int_inputs
from jitlab.jit.graph.fake_run import (
    SlowFakeRun,
    fixing_prop,
    only_varied,
    sizes_from,
    still_symbolic,
    symbolic_args,
    with_constants,
)
from jitlab.jit.graph.recording_tracer import RecordingTracer
from jitlab.jit.graph.shape_history import ShapeHistory
from jitlab.jit.graph.size_arity import parse_arity
from jitlab.jit.graph.tensor_scalars import without_tensor_scalars
from jitlab.jit.graph.torch_calls import node_op_name
from jitlab.jit.reasons import ReasonKind

if TYPE_CHECKING:  # imported where they are used: torch loads them lazily
    from torch._subclasses.fake_tensor import FakeTensorMode

    from jitlab.jit.guards.builder import GuardBuilder

# operations whose number of results depends on sizes: the sizes involved are fixed
VARIABLE_ARITY = {
    "unbind", "split", "chunk", "tensor_split", "split_with_sizes", "hsplit", "vsplit", "dsplit", "unsafe_split",
    "unsafe_chunk", "unsafe_split_with_sizes", "__iter__", "nonzero", "where", "unique", "unique_consecutive",
}  # fmt: skip
_SEQUENCES = (tuple, list, torch.Size)
_SOURCE_NAME = re.compile(r"L\['([A-Za-z_][A-Za-z0-9_]*)'\]")
_IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


class SymbolicSizes:
    """Mixin for the graph recorder: sizes read by Python stay graph values while inputs have
    symbolic dimensions (`symbolic`), and what Python decided on them is kept as `facts`."""

    history: ShapeHistory | None
    symbolic: dict[fx.Node, frozenset[int]]
    facts: list[tuple[fx.Node, Any, str | None]]  # (node, value the capture saw, why it is pinned)
    size_problem: str | None
    # provided by the graph recorder it is mixed into (recorder.py)
    tracer: RecordingTracer
    graph: fx.Graph
    placeholders: list[fx.Node]
    speculations: list[Speculation]
    node_of: dict[int, tuple[torch.Tensor, fx.Node]]
    node_for: Callable[[torch.Tensor], fx.Node]
    pause: Callable[[], contextlib.AbstractContextManager[None]]
    lazy_entry: Callable[[object], tuple[Any, ...] | None]
    lazy_int: Callable[[int, fx.Node, Any], DataInt]
    graph_arg: Callable[[object], Any]
    lazy_floats: dict[int, tuple[Any, ...]]
    dynamic_roots: dict[int, frozenset[Any]]

    def init_sizes(self, history: ShapeHistory | None) -> None:
        self.history = history
        self.symbolic = {}
        self.int_inputs: dict[fx.Node, IntInput] = {}  # outside ints made symbolic (dynamic_ints.py)
        self.facts = []
        self.size_problem = None
        self.pin_reason: str | None = None  # what reads sizes now (`reading`), for the pin's note

    def has_symbols(self) -> bool:
        """Whether the capture has symbolic sizes: tensor dimensions or int inputs."""
        return bool(self.symbolic or self.int_inputs)

    @contextlib.contextmanager
    def reading(self, reason: str) -> Iterator[None]:
        """Name what reads numbers while the block runs: a size it pins is noted with this reason
        (and the line the program runs), so that explain() says why the size is fixed."""
        outer = self.pin_reason
        if outer is None:
            self.pin_reason = reason
        try:
            yield
        finally:
            self.pin_reason = outer

    def note_input(self, node: fx.Node, tensor: torch.Tensor, label: str) -> None:
        """A new graph input: its symbolic dimensions become *roots* of the shapes derived from it
        (GraphRecorder.dynamic_roots): a size read anywhere but through `symbolic_shape` (library code
        reading `x.shape` natively, an operation whose number of results depends on a size, such as
        iterating over a tensor) fixes them."""
        node.meta["jit_label"] = label
        if self.history is None or not isinstance(tensor, torch.Tensor):
            return
        dims = self.history.dynamic_dims(label, tensor)
        if not dims:
            return
        self.symbolic[node] = dims
        node.meta["jit_varied"] = self.history.varied(label, tensor)
        with self.pause():
            roots = frozenset(
                self.lazy_floats[
                    id(self.lazy_int(tensor.size(d), self.graph.call_method("size", (node, d)), SIZE))
                ]
                for d in sorted(dims)
            )
        self.dynamic_roots[id(tensor)] = roots

    # ------------------------------------------------------------ sizes read by Python
    def symbolic_shape(self, tensor: object, name: str, args: tuple) -> Any:
        """`tensor.shape`, `.size(d)`, `.numel()`, `len(tensor)` or `.stride(d)` as graph values; None if
        not."""
        if not self.has_symbols() or not isinstance(tensor, torch.Tensor) or tensor.dim() == 0:
            return None
        known = self.node_of.get(id(tensor))
        if known is None or known[0] is not tensor or any(type(a) is not int for a in args) or len(args) > 1:
            return None
        node = known[1]
        with self.pause():
            if name == "numel" and not args:
                return self.lazy_int(tensor.numel(), self.graph.call_method("numel", (node,)), SIZE)
            if name == "__len__" and not args:
                return self.lazy_int(len(tensor), self.graph.call_method("size", (node, 0)), SIZE)
            if name in ("shape", "size") and not args:
                return torch.Size(
                    self.lazy_int(n, self.graph.call_method("size", (node, i)), SIZE)
                    for i, n in enumerate(tensor.shape)
                )
            if name == "size" and args:
                dim = args[0] % tensor.dim()
                return self.lazy_int(tensor.size(dim), self.graph.call_method("size", (node, dim)), SIZE)
            # strides follow from the sizes (Longformer's `as_strided` of its chunks): the graph reads
            # them on every call, as sizes
            if name == "stride" and not args:
                return tuple(
                    self.lazy_int(n, self.graph.call_method("stride", (node, i)), SIZE)
                    for i, n in enumerate(tensor.stride())
                )
            if name == "stride" and args:
                dim = args[0] % tensor.dim()
                return self.lazy_int(tensor.stride(dim), self.graph.call_method("stride", (node, dim)), SIZE)
        return None

    def size_derived(self, entry: tuple, depth: int = 0) -> bool:
        """Whether a lazy number comes from sizes only (not from tensor data)."""
        index, parents = entry[2], entry[3]
        if index is SIZE:
            return True
        if index is not None or not parents or depth > 16:
            return False
        return all(self.size_derived(p, depth + 1) for p in parents)

    def fix_size(self, entry: tuple) -> bool:
        """Python reads a size-derived number: keep it as a fact (the value, checked as a guard),
        with why it was pinned and where."""
        if not self.has_symbols() or not self.size_derived(entry):
            return False
        where = self.tracer.running_line()
        why = self.pin_reason or "read by Python code"
        self.facts.append((entry[1], int(entry[0]), f"{why}{f' at {where}' if where else ''}"))
        return True

    def arity_fact(self, name: str, args: tuple, kwargs: dict) -> bool:
        """An operation whose number of results depends on a size (`split`, `chunk`, `unbind`, iterating
        over a tensor): instead of pinning every size of its input, keep the number of results as a
        fact (size_arity.py). False when the arguments are not understood (then the sizes are pinned)."""
        parsed = parse_arity(name, args, kwargs)
        if parsed is None:
            return False
        tensor, dim, count, extra = parsed
        if count is None:
            return True  # the arguments alone fix the number of results (`split([2, 3])`)
        node = self.node_for(tensor)
        with self.pause():
            size = self.graph.call_method("size", (node, dim))
            empty = tensor.size(dim) == 0
            self.facts.append((self.graph.call_function(operator.eq, (size, 0)), empty, None))
            if not empty:
                value = count(tensor.size(dim), *(int(a) for a in extra))
                arity = self.graph.call_function(count, (size, *(self.graph_arg(a) for a in extra)))
                self.facts.append((arity, value, None))
        return True

    def sequence_decision(self, fn: Callable[..., Any], args: tuple) -> bool | None:
        """`x.size() != (b * h, t, s)` (transformers' attention checks): two sequences of numbers
        holding sizes, compared item by item, each comparison a fact; None when not such a case."""
        a, b = args
        if type(a) not in _SEQUENCES or type(b) not in _SEQUENCES:
            return None
        if not all(type(v) in (int, DataInt) for v in (*a, *b)):
            return None
        if not any(self.lazy_entry(v) is not None for v in (*a, *b)):
            return None
        if len(a) == len(b):
            for x, y in zip(a, b):
                if self.lazy_entry(x) is not None or self.lazy_entry(y) is not None:
                    if (
                        self.size_decision(operator.eq, (x, y), (self.graph_arg(x), self.graph_arg(y)))
                        is None
                    ):
                        return None  # not sizes only (a number read from data): read as before
        equal = list(a) == list(b)
        return equal if fn is operator.eq else not equal

    def size_decision(self, fn: Callable[..., Any], args: tuple, node_args: tuple) -> Any:
        """A comparison (or truth test) of size-derived numbers: the outcome is a fact."""
        entries = [self.lazy_entry(a) for a in args]
        if not self.has_symbols() or not all(e is None or self.size_derived(e) for e in entries):
            return None
        result = fn(*args)
        if type(result) is not bool:
            return None
        if fn is operator.truth:  # `bool(n)` of a symbolic size would be decided on the fake run: `n != 0`
            fn, node_args = operator.ne, (node_args[0], 0)
        self.facts.append((self.graph.call_function(fn, node_args), result, None))
        return result


@dataclass
class ShapeInfo:
    """A graph run on fake tensors with symbolic sizes: the fake-tensor mode (for compiling), the
    fake inputs with their sources, and the facts (size expression, value the capture saw)."""

    mode: FakeTensorMode
    placeholders: list[Any]  # fake inputs, in the graph's placeholder order
    sources: list[Any]
    # (sympy expression, expected value, why it was pinned: None for a decision such as `B > 1`)
    facts: list[tuple[Any, Any, str | None]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)  # node name -> fake value
    segments: dict[str, int] = field(default_factory=dict)  # input variable -> segment reading it
    described: list[str] = field(default_factory=list)  # "args[0] (*, 16)": inputs with symbolic sizes
    pinned: list[str] = field(default_factory=list)  # sizes the program pinned, why and where (`pins`)
    fixed_by: dict[Any, fx.Node] = field(default_factory=dict)  # input size symbol -> node that fixed it

    def placed_guards(self, compiled: bool) -> list[tuple[int, str]]:
        """The guards, each with the segment whose guard block checks it: the last segment whose
        inputs it reads (a break's result is only known after the break)."""
        out = []
        for guard in self.guards(compiled):
            names = set(_IDENTIFIER.findall(guard))
            out.append((max((self.segments.get(n, 0) for n in names), default=0), guard))
        return out

    def fake_input(self, node: fx.Node) -> Any:
        """The fake value to compile a graph taking `node` with: the fake input itself for a graph
        input; for a value from an earlier graph, its fake with the real value's requires_grad (the
        fake run keeps detached copies, which would make the compiler drop gradients). A float
        input (a learning rate, a global's float) is the constant the fake run took it as."""
        for fake, source in zip(self.placeholders, self.sources):
            if source.local_name == node.meta.get("jit_var") and node.op == "placeholder":
                return fake
        real = node.meta.get("example_value")
        if node.name not in self.values and type(real) is float:
            return real
        value = self.values[node.name]
        if isinstance(value, torch.Tensor) and isinstance(real, torch.Tensor) and real.requires_grad:
            value = value.detach().requires_grad_(True)
        return value

    def guards(self, compiled: bool) -> list[str]:
        """Python conditions over the entry's variables (`2 <= v0.size()[0]`...), read after
        compiling (a compiler may add some).

        A graph run as it is (`compiled=False`) computes every size when it runs, so only what
        Python decided while capturing (the facts) needs checking. A compiled graph also assumes
        what its compilation assumed: the ShapeEnv's guards (relations, sizes >= 2, and whatever the
        fake run or the compiler decided). Sizes the fake run had to fix after all (an operation
        that is not written for symbolic sizes) are checked by value in both cases."""
        env = self.mode.shape_env
        if not compiled:
            out = [g for g in (self._fact_guard(expr, value) for expr, value, _why in self.facts) if g]
        else:
            out = [_local(g) for g in env.produce_guards(self.placeholders, self.sources)]
        for fake, source in zip(self.placeholders, self.sources):
            if isinstance(fake, torch.SymInt):  # an int input (dynamic_ints.py)
                expr = env.replace(fake.node.expr)
                if expr.is_number:  # fixed on the fake run or while compiling: check it by value
                    out.append(f"{_local(source.name)} == {int(expr)}")
                continue
            for dim, size in enumerate(fake.shape):
                if isinstance(size, torch.SymInt):
                    expr = env.replace(size.node.expr)
                    if expr.is_number:  # made symbolic, then fixed while compiling: check it by value
                        out.append(f"{_local(source.name)}.size()[{dim}] == {int(expr)}")
        return list(dict.fromkeys(out))  # a size read in every layer is one fact per layer

    def pins(self, labels: dict[str, str]) -> list[str]:
        """One note per size the program pinned (a fact that is no decision): the guard, over the
        inputs' names (`labels`: entry variable -> source), why and where, for explain()."""
        out = []
        for expr, value, why in self.facts:
            guard = self._fact_guard(expr, value) if why is not None else None
            if guard is None:
                continue
            named = _IDENTIFIER.sub(lambda m: labels.get(m.group(0), m.group(0)), guard)
            note = f"{named}: {why}"
            if note not in out:
                out.append(note)
        return out

    def _fact_guard(self, expr: object, value: object) -> str | None:
        import sympy
        from torch.utils._sympy.printers import PythonPrinter

        if not isinstance(expr, sympy.Basic) or expr.is_number or expr in (sympy.true, sympy.false):
            return None
        text = PythonPrinter().doprint(expr)
        env = self.mode.shape_env
        for symbol in sorted(expr.free_symbols, key=lambda x: -len(str(x))):
            sources = env.var_to_sources.get(symbol)
            if not sources:
                return f"False  # no source for {symbol}"  # never happens: every symbol is an input size
            text = re.sub(rf"\b{symbol}\b", _local(sources[0].name), text)
        if value is True:
            return text
        if value is False:
            return f"not ({text})"
        return f"{text} == {value!r}" if " " not in text else f"({text}) == {value!r}"


def _local(text: str) -> str:
    """`L['v0']` (a TorchDynamo LocalSource) -> `v0`, the entry's variable."""
    return _SOURCE_NAME.sub(r"\1", text)


def guard_namespace() -> dict[str, Any]:
    from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP

    return dict(SYMPY_INTERP)


def retrace(gm: fx.GraphModule, placeholders: list[fx.Node], dims_of: dict[fx.Node, frozenset[int]],
            facts: list[tuple[fx.Node, Any, str | None]]) -> ShapeInfo:  # fmt: skip
    """Run `gm` on fake inputs whose `dims_of` dimensions are symbolic (each its own symbol), and
    check the facts there (which adds them to the ShapeEnv's guards). Raises Unsupported when the
    graph cannot run on fakes or disagrees with what the capture saw."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._dynamo.source import LocalSource
    from torch._subclasses.fake_tensor import FakeTensorMode, disable_fake_tensor_cache
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    mode = FakeTensorMode(shape_env=ShapeEnv(duck_shape=False))
    fakes: dict[str, Any] = {}
    sources, order = [], []
    for node in placeholders:
        real = node.meta["example_value"]
        if type(real) is int:  # an int input: a symbol of its own (dynamic_ints.py)
            source = LocalSource(node.meta["jit_var"])
            fakes[node.name] = int_fake(mode.shape_env, real, source)
            sources.append(source)
            order.append(fakes[node.name])
            continue
        dims = dims_of.get(node, frozenset())
        sizes = [DimDynamic.DYNAMIC if d in dims else DimDynamic.STATIC for d in range(real.dim())]
        source = LocalSource(node.meta["jit_var"])
        context = StatelessSymbolicContext(dynamic_sizes=sizes)
        fake = mode.from_tensor(real, source=source, symbolic_context=context)
        fakes[node.name] = fake
        sources.append(source)
        order.append(fake)
    graph_inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    fact_exprs = []
    symbols = [
        n.node._expr
        for fake in order
        for n in (fake.shape if isinstance(fake, torch.Tensor) else (fake,))
        if isinstance(n, torch.SymInt)
    ]
    prop = fixing_prop()(gm, mode, symbols)
    try:
        # with torch's Python dispatcher, as TorchDynamo runs its fake values: composite operations
        # then decompose into ones written for symbolic sizes (C++ `fft_fftn` reads `sizes()`, which
        # fixed FNet's batch and length); the graph's own grad-mode switches run for real: the mode
        # is put back whatever happens. Without the fake-tensor mode's dispatch cache: building and
        # checking each entry evaluates the output's symbolic sizes again in sympy, which cost more
        # than a run's rare repeats of one operation on the same sizes saved (Longformer's run:
        # 33-35 s of CPU with it, 25-26 s without; OPT, XLNet, ConvBERT, GPT-2 and DeBERTa 15-35% less)
        with (
            torch.set_grad_enabled(torch.is_grad_enabled()),
            enable_python_dispatcher(),
            disable_fake_tensor_cache(mode),
        ):
            prop.propagate_dont_convert_inputs(*(fakes[n.name] for n in graph_inputs))
        values = {n.name: n.meta.get("val") for n in gm.graph.nodes}
        for node, expected, why in facts:
            value = values.get(node.name)
            if not isinstance(value, (torch.SymInt, torch.SymBool)) and symbolic_args(node, values):
                # computed from symbolic sizes, but decided on the fake run: its expression is lost,
                # so no guard could keep it (a wrong result): sizes stay static instead
                raise Unsupported(
                    f"a decision on sizes ({node.target}) cannot be kept as a guard",
                    ReasonKind.DATA_DEPENDENT,
                )
            expr = value.node.expr if isinstance(value, (torch.SymInt, torch.SymBool)) else value
            if isinstance(value, (torch.SymInt, torch.SymBool)):
                value = type(expected)(value)  # evaluating it installs the guard
            if value != expected:
                raise Unsupported(
                    f"a size read while capturing ({expected!r}) differs on fake tensors ({value!r}): "
                    f"{_described(node)}",
                    ReasonKind.DATA_DEPENDENT,
                )
            fact_exprs.append((expr, expected, why))
    except Unsupported:
        raise
    except Exception as exc:
        raise Unsupported(
            f"the graph cannot run with symbolic sizes ({type(exc).__name__}: {exc})",
            ReasonKind.DATA_DEPENDENT,
        ) from None
    segments = {n.meta["jit_var"]: n.meta.get("jit_segment", 0) for n in placeholders}
    info = ShapeInfo(mode, order, sources, fact_exprs, values, segments)
    info.fixed_by = prop.fixed_by
    return info


def _described(node: fx.Node, what: str = "") -> str:
    """The operation a note is about, and where the program called it: `op on the fake run, which
    {what} at file:line` with `what`, else `op at file:line`."""
    target = node_op_name(node) or str(node.target)
    where = node.meta.get("jit_where")
    text = f"{target} on the fake run, which {what}" if what else str(target)
    return f"{text}{f' at {where}' if where else ''}"


def plan_shapes(
    recorder: SymbolicSizes, gm: fx.GraphModule, builder: GuardBuilder, rechecked_after: bool = False
) -> ShapeInfo | None:
    """`_plan_shapes`; when sizes stay static, the ints made graph inputs are guarded by value."""
    info = _plan_shapes(recorder, gm, builder, rechecked_after)
    if info is None:
        pin_int_inputs(recorder)
    return info


def _plan_shapes(
    recorder: SymbolicSizes, gm: fx.GraphModule, builder: GuardBuilder, rechecked_after: bool = False
) -> ShapeInfo | None:
    """For a capture with symbolic input sizes: the retrace, and the tensor guards told which sizes
    not to check (every segment's builder, `builder` being the last one). None (static sizes) when
    the graph reads tensor data or cannot run on fakes.

    `rechecked_after`: the speculations on tensor data are re-checked on the values the graph (or
    the check prefix) computes on each call, whatever the sizes (one graph, no data break), so
    they leave the sizes symbolic: Longformer decides `is_global_attn = mask.any().item()` on every
    call. Values read from data that stay in the graph (eager backend) still keep sizes static."""
    if not recorder.has_symbols():
        return None
    data = [e for e in recorder.lazy_floats.values() if not recorder.size_derived(e)]
    if (recorder.speculations and not rechecked_after) or any(type(e[0]) is not float for e in data):
        recorder.size_problem = "sizes stay static in a graph that reads tensor data"
        return None
    # floats read from tensor data (an optimizer's step count) or taken as inputs (a learning rate)
    # are handed to tensor operations as scalars only: they decide no size, so the run on fake
    # tensors takes them as the constants the capture saw
    floats = {e[1].name: e[0] for e in data}
    if floats and any(sizes_from(node, floats) for node in gm.graph.nodes):
        recorder.size_problem = "sizes stay static: a float read from tensor data decides a size (arange)"
        return None
    placeholders = [
        n
        for n in recorder.placeholders
        if isinstance(n.meta.get("example_value"), torch.Tensor) or n in recorder.int_inputs
    ]
    if any(n.name not in floats for n in recorder.placeholders if n not in placeholders):
        recorder.size_problem = "sizes stay static: a graph input is not a tensor"
        return None
    # on the graph compilers get: torch.optim's 0-d tensor step sizes as operands (ATen would read
    # them with `.item()`, an unbacked float on fakes); values are named by the original nodes too
    fake_gm = with_constants(gm, floats)
    renamed = without_tensor_scalars(fake_gm.graph)
    fake_gm.recompile()
    try:
        info = retrace(fake_gm, placeholders, recorder.symbolic, recorder.facts)
    except SlowFakeRun as exc:
        # every dimension symbolic made size expressions sympy cannot simplify in time: only those
        # that varied (the graph was recorded for any size: fixing more of them is sound, the tensor
        # guards then check them)
        varied = only_varied(recorder.symbolic)
        if varied == recorder.symbolic or not (varied or recorder.int_inputs):
            recorder.size_problem = exc.reason
            return None
        recorder.symbolic = varied
        try:
            info = retrace(fake_gm, placeholders, recorder.symbolic, recorder.facts)
        except Unsupported as again:
            recorder.size_problem = f"{exc.reason}; with only the sizes that varied symbolic: {again.reason}"
            return None
    except Unsupported as exc:
        recorder.size_problem = exc.reason
        return None
    info.values.update({old: info.values.get(new.name) for old, new in renamed.items()})
    chain = builder.chain() if hasattr(builder, "chain") else [builder]
    for b in chain:
        b.dynamic_vars = {
            n.meta["jit_var"]: dims
            for n, dims in recorder.symbolic.items()
            if n.meta.get("jit_segment", 0) == getattr(b, "segment", 0)
        }
    fake_of = dict(zip(placeholders, info.placeholders))
    for node, dims in recorder.symbolic.items():
        node.meta["jit_dynamic"] = dims
        free = still_symbolic(info.mode.shape_env, fake_of.get(node))
        sizes = ", ".join(
            "*" if d in dims and d in free else str(n) for d, n in enumerate(node.meta["example_value"].shape)
        )
        info.described.append(f"{node.meta.get('jit_label', node.name)} ({sizes})")
    for node in recorder.int_inputs:
        free = not info.mode.shape_env.replace(fake_of[node].node.expr).is_number
        info.described.append(f"{node.meta['jit_label']} (int {'*' if free else node.meta['example_value']})")
    info.pinned = info.pins({n.meta["jit_var"]: n.meta.get("jit_label", n.name) for n in placeholders})
    for node, fake in fake_of.items():
        label, real = node.meta.get("jit_label", node.name), node.meta["example_value"]
        if isinstance(fake, torch.SymInt):  # an int input: each one changed between captures
            sizes = [(fake, label, real)]
        else:
            varied = node.meta.get("jit_varied", ())
            sizes = [
                (n, f"{label}.size()[{d}]", real.shape[d]) for d, n in enumerate(fake.shape) if d in varied
            ]
        for n, text, value in sizes:
            by = info.fixed_by.get(n.node._expr) if isinstance(n, torch.SymInt) else None
            if by is not None and by.op != "placeholder":
                info.pinned.append(f"{text} == {value}: fixed by {_described(by, 'needed its value')}")
    return info


def whole_graph(recorder: SymbolicSizes, holder: nn.Module) -> fx.GraphModule:
    """The recorded graph as one module with no outputs (graphs with breaks are split later)."""
    graph = fx.Graph()
    graph.graph_copy(recorder.graph, {})
    graph.output(())
    return fx.GraphModule(holder, graph)
