"""A float read from tensor data (`loss.item()`, `float(t)`) that only reaches the call's result,
with a compiling backend: read after the compiled graph, not guarded by its value.

With the eager backend such a float is a value of the graph (recorder.lazy_floats), which the
GraphModule computes on every call. A compiler cannot keep `.item()` inside a graph, so a compiling
backend used to make every such read a speculation re-checked by value after the graph: a training
step returning `loss.item()` missed on every call and was captured again until the cache limit.

Now the read is kept lazy there too (`ResultReads`, a mixin of the recorder), and stays so as long as
nothing but the result reads it: Python deciding on it, native code reading it, arithmetic on it and
a tensor operation taking it (which a compiler would need inside the graph) each make it a
speculation as before, with its value a constant of the graph. `split_result_reads` takes the reads
left out of the graph handed to the compiler: the graph returns a copy of the tensor read (taken where
the program read it, so that later in-place changes do not reach it) and the entry reads it after.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.fx as fx

_READ_METHODS = ("item",)
_READ_FUNCTIONS = (float,)


class ResultReads:
    """Mixin of the graph recorder: with a compiling backend (`lazy` False), a float read from tensor
    data stays lazy while only the result reaches it."""

    lazy: bool
    graph: fx.Graph
    lazy_floats: dict[int, tuple[Any, ...]]
    lazy_entry: Callable[[object], tuple[Any, ...] | None]
    lazy_entries_in: Callable[[object], list[tuple[Any, ...]]]
    activate: Callable[[tuple], None]

    def read_after_graph(self, entry: tuple[Any, ...]) -> bool:
        """Whether a lazy entry is such a read (with the eager backend every read stays in the graph)."""
        return not self.lazy and type(entry[2]) is int and entry[2] >= 0

    def graph_arg(self, value: object) -> Any:
        """A float read kept for after the graph, handed to a tensor operation, is re-checked and a
        constant of the graph from now on."""
        if not self.lazy and type(value) is float:
            entry = self.lazy_entry(value)
            if entry is not None and self.read_after_graph(entry):
                self.activate(entry)
                return value  # a constant of the graph, re-checked after it
        return super().graph_arg(value)  # type: ignore[misc]

    def lazy_arithmetic(self, fn: Callable[..., Any], args: tuple, result: object) -> Any:
        if not self.lazy and self._reads_in(args):
            return None  # read natively: a speculation
        return super().lazy_arithmetic(fn, args, result)  # type: ignore[misc]

    def lazy_sum(self, args: tuple) -> Any:
        if not self.lazy and self._reads_in(args):
            return None
        return super().lazy_sum(args)  # type: ignore[misc]

    def _reads_in(self, values: object) -> bool:
        return any(self.read_after_graph(e) for e in self.lazy_entries_in(values))

    def finish(self, output_nodes: list[fx.Node]) -> None:
        """Add the output node; the reads that became speculations and do not reach the result are
        taken out of the graph (a compiler gets no `.item()`)."""
        super().finish(output_nodes)  # type: ignore[misc]
        if self.lazy:
            return
        for entry in self.lazy_floats.values():
            node = entry[1]
            if self.read_after_graph(entry) and not node.users and not node._erased:
                self.graph.erase_node(node)


def _is_read(node: fx.Node) -> bool:
    if node.op == "call_method":
        return node.target in _READ_METHODS and len(node.args) == 1 and not node.kwargs
    return node.op == "call_function" and node.target in _READ_FUNCTIONS and len(node.args) == 1


def split_result_reads(
    gm: fx.GraphModule,
) -> tuple[fx.GraphModule, Callable[[Callable[..., Any]], Callable[..., Any]]] | None:
    """`gm` with each read of a number whose only user is the output (a flat tuple) replaced by a
    detached copy of the tensor read, and the wrapper that makes the compiled callable's outputs
    those numbers again; None when there is no such read."""
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    outs = output.args[0]
    if not isinstance(outs, (tuple, list)):
        return None
    reads = {
        i: n
        for i, n in enumerate(outs)
        if isinstance(n, fx.Node)
        and _is_read(n)
        and set(n.users) == {output}
        and isinstance(n.args[0], fx.Node)
    }
    if not reads:
        return None
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for node in gm.graph.nodes:
        if node.op == "output":
            new_outs = [env[n] if isinstance(n, fx.Node) else n for n in outs]
            graph.output(type(outs)(new_outs))
        elif node in reads.values():
            tensor = env[node.args[0]]
            env[node] = graph.call_method("clone", (graph.call_method("detach", (tensor,)),))
        else:
            env[node] = graph.node_copy(node, env.__getitem__)
    how = {i: node.target for i, node in reads.items()}
    split = fx.GraphModule(gm, graph)

    def wrap(compiled: Callable[..., Any]) -> Callable[..., Any]:
        def call(*inputs: object) -> Any:
            got = list(compiled(*inputs))
            for i, target in how.items():
                got[i] = getattr(got[i], target)() if isinstance(target, str) else target(got[i])
            return tuple(got)

        return call

    return split, wrap
