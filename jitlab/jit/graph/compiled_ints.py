"""An int read from tensor data (`n = int((y > 0).sum().item())`) that only reaches tensor arithmetic
(`loss * (1 + n)`), kept in the graph with a compiling backend too.

With the eager backend such an int is a `DataInt` the GraphModule computes on every call
(recorder.py). A compiling backend used to make every such read a speculation re-checked by value
after the graph: each new value missed and was captured again (7 captures in 12 calls of a training
step scaling its loss by a count). Now the read stays a `DataInt` here too (`CompiledInts`, a mixin
of the recorder) as long as only Python arithmetic and tensor operations taking a number operand
(`mul`, `add`, comparisons, `fill_`, `where`, ...) read it: the graph reads it with `.item()`, which
the compiler traces in a fake-tensor mode with a ShapeEnv as an unbacked SymInt (backends.py), the
way TorchDynamo does with `capture_scalar_outputs`, so a new value needs no new capture. Anything
else makes it a speculation as before, with its value a constant of the graph: Python deciding on it
(`if n > 3`, `range(n)`), native code reading it, and any other tensor operation taking it (a size:
`torch.zeros(n)`, `x[:n]`, `x.view(n, -1)`), where a compiler would have to decide on the symbol.
explain() says which reads stayed in the graph and which were re-checked, with their lines.

When the compiler refuses the graph all the same, the graph runs uncompiled (api.py), with the read
inside it: the right value on every call.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

from jitlab.jit.graph.data_values import DATA_INT, DataInt, Speculation
from jitlab.jit.graph.recording_tracer import RecordingTracer

#: tensor operations whose number operand does not decide a shape or a branch inside the compiler
OPERAND_OPS = frozenset(
    {f"__{op}__" for op in ("add", "radd", "iadd", "sub", "rsub", "isub", "mul", "rmul", "imul")}
    | {f"__{op}__" for op in ("truediv", "rtruediv", "itruediv", "eq", "ne", "lt", "le", "gt", "ge")}
    | {"add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "multiply", "div", "div_", "true_divide"}
    | {"eq", "ne", "lt", "le", "gt", "ge", "clamp", "clamp_", "clamp_min", "clamp_max", "fill_"}
    | {"masked_fill", "masked_fill_", "where", "full_like", "addcmul", "addcmul_", "lerp", "lerp_"}
)

#: Python arithmetic a compiler traces on an unbacked SymInt without deciding on its value
SYMBOLIC_ARITHMETIC = frozenset(
    {operator.add, operator.sub, operator.mul, operator.neg, operator.pos, operator.truediv}
)

_READS = ("item", "__int__")  # `int(t)` through native_calls._lazy_int_call; not __index__ (native reads)


class CompiledInts:
    """Mixin of the graph recorder: with a compiling backend (`lazy` False), an int read from
    integer tensor data stays a `DataInt` of the graph while only arithmetic reads it."""

    lazy: bool
    symbolic_ints = False  # a named compiler is the backend (a callable one could bake the value in)
    graph: fx.Graph
    native_depth: int
    raising_check: str | None
    tracer: RecordingTracer
    all_speculations: list[Speculation]
    active_indices: set[int]
    lazy_floats: dict[int, tuple[Any, ...]]
    dynamic_roots: dict[int, frozenset[Any]]
    lazy_entry: Callable[[object], tuple[Any, ...] | None]
    lazy_entries_in: Callable[[object], list[tuple[Any, ...]]]
    lazy_int: Callable[[int, fx.Node, Any], DataInt]

    def record_speculation(self, func, name, args, kwargs, out) -> Any:
        """An int read from integer tensor data for a compiler stays a `DataInt` of the graph (its
        speculation inactive until Python decides on it)."""
        before = len(self.all_speculations)
        result = super().record_speculation(func, name, args, kwargs, out)  # type: ignore[misc]
        if len(self.all_speculations) != before + 1 or not self._keeps_int(name, args, kwargs, result):
            return result
        spec = self.all_speculations[before]
        if before not in self.active_indices or spec.truth is not None or spec.raises is not None:
            return result
        self.active_indices.discard(before)
        self._note_int(before)
        node = self.graph.call_method("item", (spec.nodes[0],))
        node.meta[DATA_INT] = result
        return self.lazy_int(result, node, before)

    def _keeps_int(self, name: str, args: tuple, kwargs: dict, result: object) -> bool:
        if self.lazy or not self.symbolic_ints or self.native_depth or self.raising_check is not None:
            return False
        if type(result) is not int or name not in _READS or len(args) != 1 or kwargs:
            return False
        tensor = args[0]
        return (
            isinstance(tensor, torch.Tensor)
            and not tensor.is_floating_point()
            and not tensor.is_complex()
            and tensor.dtype is not torch.bool
        )

    def compiled_int(self, entry: tuple[Any, ...]) -> bool:
        """Whether a lazy entry is such an int, or arithmetic on one (`n + 1`; `n / 3` and `0.01 * n`,
        floats, too: a compiler would guard on them as on the int wherever they give a size)."""
        return not self.lazy and type(entry[0]) in (DataInt, float) and self._root_reads(entry) is not None

    def _root_reads(self, entry: tuple[Any, ...], depth: int = 0) -> list[int] | None:
        """The speculation indices an int kept for a compiler comes from, None for other ints."""
        index, parents = entry[2], entry[3]
        if type(index) is int and index >= 0:  # a float read is result_reads.py's
            return [index] if type(entry[0]) is DataInt else None
        if index is not None or not parents or depth > 16:
            return None
        found: list[int] = []
        for parent in parents:  # only lazy values: the plain numbers of the arithmetic have no entry
            reads = self._root_reads(parent, depth + 1)
            if reads is None:
                return None
            found += reads
        return found

    def _settled(self, entry: tuple[Any, ...]) -> bool:
        """Whether every read the int comes from is re-checked by value: its value is then a constant."""
        reads = self._root_reads(entry)
        return reads is not None and all(i in self.active_indices for i in reads)

    def lazy_arithmetic(self, fn: Callable[..., Any], args: tuple, result: object) -> Any:
        if (fn is int or fn is operator.index) and len(args) == 1 and type(args[0]) is DataInt:
            entry = self.lazy_entry(args[0])
            if entry is not None and self.compiled_int(entry):
                return args[0]  # the same int (a compiler cannot trace `int()` of a symbol)
        if fn not in SYMBOLIC_ARITHMETIC:  # `max(n, 3)`, `n // 2`: a compiler guards on the symbol
            for entry in self._int_entries(args):
                self.activate(entry)
        made = super().lazy_arithmetic(fn, args, result)  # type: ignore[misc]
        entry = self.lazy_entry(made) if made is not None else None
        if entry is not None and self.compiled_int(entry):
            # its value, handed to a later compiled part (host_split.py, segments.py) as a 0-d tensor
            entry[1].meta[DATA_INT] = int(made) if type(made) is DataInt else float(made)
        return made

    def read_after_graph(self, entry: tuple[Any, ...]) -> bool:
        return type(entry[0]) is not DataInt and super().read_after_graph(entry)  # type: ignore[misc]

    def graph_arg(self, value: object) -> Any:
        """An int kept for a compiler whose every read is re-checked anyway is a constant of the graph."""
        if (type(value) is DataInt or type(value) is float) and not self.lazy:
            entry = self.lazy_entry(value)
            if entry is not None and self.compiled_int(entry) and self._settled(entry):
                # re-checked after the graph: a constant of it
                return int(value) if type(value) is DataInt else float(value)
        return super().graph_arg(value)  # type: ignore[misc]

    def record_op(self, func, getter, name, args, kwargs, out) -> None:
        """A kept int handed to an operation other than a number operand is re-checked (a size);
        the shape of the result of one that is does not depend on it."""
        kept = [e for e in self._int_entries((args, kwargs)) if not self._settled(e)]
        if kept and name not in OPERAND_OPS:
            for entry in kept:  # a size or an index: the compiler would decide on it
                self.activate(entry)
            kept = []
        super().record_op(func, getter, name, args, kwargs, out)  # type: ignore[misc]
        if kept and isinstance(out, torch.Tensor):  # its shape does not depend on the number
            roots = self.dynamic_roots.get(id(out), frozenset()) - frozenset(kept)
            if roots:
                self.dynamic_roots[id(out)] = roots
            else:
                self.dynamic_roots.pop(id(out), None)

    def _int_entries(self, values: object) -> list[tuple[Any, ...]]:
        if self.lazy or not self.lazy_floats:
            return []
        entries = self.lazy_entries_in(values)
        return [e for e in entries if self.compiled_int(e)]

    def finish(self, output_nodes: list[fx.Node]) -> None:
        """Add the output node; take the reads of re-checked ints nothing uses any more out of the graph."""
        super().finish(output_nodes)  # type: ignore[misc]
        if self.lazy:
            return
        for entry in reversed(list(self.lazy_floats.values())):
            node = entry[1]
            if self.compiled_int(entry) and self._settled(entry) and not node.users and not node._erased:
                self.graph.erase_node(node)

    def activate(self, lazy: tuple) -> None:
        """Also replace explain()'s note of each kept int now re-checked after all."""
        super().activate(lazy)  # type: ignore[misc]
        for index, (kept, checked) in getattr(self, "_int_notes", {}).items():
            if index in self.active_indices and kept in self.tracer.notes:
                self.tracer.notes[self.tracer.notes.index(kept)] = checked

    def _note_int(self, index: int) -> None:
        """explain()'s note of a kept int, and the one replacing it if the int is re-checked after all."""
        spec = self.all_speculations[index]
        what = f"{spec.text.split(' == ')[0]}{f' at {spec.where}' if spec.where else ''}"
        kept = f"{what}: an int read from tensor data kept in the compiled graph (an unbacked SymInt)"
        checked = (
            f"{what}: an int read from tensor data that Python decides on or that gives a size: "
            "re-checked by value after the graph (a capture per value)"
        )
        if not hasattr(self, "_int_notes"):
            self._int_notes: dict[int, tuple[str, str]] = {}
        self._int_notes[index] = (kept, checked)
        if kept not in self.tracer.notes:
            self.tracer.notes.append(kept)
