"""Python ints read from outside that change between calls become symbolic graph inputs (automatic
dynamic ints), as TorchDynamo makes such an int a SymInt after it changed once.

The first capture fixes every int it reads with a guard (`cache.layers[0].cumulative_length == 17`,
the token count of transformers' sliding-window caches). When a later capture reads another value
from the same place, the int becomes an input of the graph, a size like those of the tensors with
symbolic dimensions (graph/shapes.py): the program gets a `DataInt` that keeps its graph node, so
tensor operations (`x[:, -n:]`, `torch.arange(n)`, `x.view(b, n, -1)`) and Python arithmetic on it
(`n + 1`, stored back into the object and replayed from the graph's output) are recorded with the
int, not its value. A comparison (`if n > 8`) is a fact, a guard on the int's value range; any other
read by Python (`range(n)`, a list index, a dict key, native code) pins the value with a guard named
in explain(). After the capture, the graph runs on fake values where the int is a symbol of the
ShapeEnv (`retrace`). When that run cannot be done (sizes stay static, `plan_shapes` says why), the
ints are guarded by value as before (`pin_int_inputs`), so nothing the graph assumed goes unchecked.

A graph run as it is (backend "eager") computes every size from the ints it is handed. A named
compiling backend ("aot_eager", "inductor") gets the graph with the int's placeholder a SymInt of
the ShapeEnv, as TorchDynamo hands Inductor an unspecialised int, and the entry hands it the int on
every call; a callable backend keeps ints constant (it gets real values, and could bake one in).
A compiled graph with host operations (a training step's backward pass or optimizer step) is
captured once more with its ints constant (`keep_ints_constant`).
Whatever the compiler assumed of the symbol while compiling is a guard of the entry (placed after
compiling, entries/codegen.build_entry). So Mistral's and Gemma's sliding-window caches, whose
`cumulative_length` grows by one every token, keep one decode entry with Inductor too (before, one
capture per token until the cache limit, then eager for good). Values 0 and 1 stay specialised (as
TorchDynamo's), bools are no ints here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from jitlab.jit.errors import Unsupported
from jitlab.jit.graph.data_values import SIZE, DataInt
from jitlab.jit.graph.dynamic_scalars import ScalarRecorder
from jitlab.jit.guards.builder import GuardBuilder
from jitlab.jit.guards.sources import Source
from jitlab.jit.reasons import ReasonKind

if TYPE_CHECKING:  # imported where they are used: torch loads them lazily
    import torch.fx as fx
    from torch._dynamo.source import LocalSource
    from torch.fx.experimental.symbolic_shapes import ShapeEnv


@dataclass(frozen=True, eq=False)
class IntInput:
    """An int made a graph input: where it was read, by which guard builder, and its value then."""

    builder: GuardBuilder
    source: Source
    value: int

    def pin(self) -> None:
        """The entry keeps static sizes: guard the int by value, as the first capture did."""
        self.builder.equals_match(self.source, self.value)


class IntRecorder(ScalarRecorder, Protocol):
    """What making an int read from outside a graph input uses of the graph recorder (besides what
    a float needs): the ints made inputs so far, and making a lazy int of a node."""

    int_inputs: dict[fx.Node, IntInput]
    symbolic_ints: bool  # a named compiler is the backend (compiled_ints.py)

    def lazy_int(self, value: int, node: fx.Node, index: object) -> DataInt: ...


def dynamic_int(
    recorder: IntRecorder, builder: GuardBuilder, source: Source, value: int, written: Callable[[], bool]
) -> DataInt | None:
    """The int the program gets for `value` read from `source`, kept as a symbolic graph input, or
    None when it stays a guarded constant (first sight, unchanged, 0 or 1 or beyond 64 bits, a read
    by native code, after a graph break, or a place the call wrote before:
    `written()`; the input is the value the place holds when the call starts). A place read twice
    is one input."""
    history = getattr(recorder.history, "scalars", None) if recorder.history is not None else None
    if history is None or type(value) is not int:
        return None
    label = source.describe()
    history.note(label, value)
    if recorder.native_depth or getattr(recorder, "segment", 0) > 0:
        return None
    # a callable backend gets the real values and could bake the int in (as compiled_ints.py)
    if not recorder.lazy and not recorder.symbolic_ints:
        return None
    if not history.changed(label, int) or value in (0, 1) or not -(2**62) < value < 2**62 or written():
        return None
    if label in history.constant:
        note = f"{label} stays a constant: {history.constant[label]}"
        if note not in recorder.tracer.notes:
            recorder.tracer.notes.append(note)
        return None
    for node, read in recorder.int_inputs.items():
        if read.source == source:  # read again: the same input (another value: guarded by value)
            return recorder.lazy_int(value, node, SIZE) if read.value == value else None
    node = recorder.new_placeholder(label)
    node.meta["example_value"] = value
    node.meta["jit_var"] = builder.var(source)
    node.meta["jit_label"] = label
    node.meta["jit_segment"] = getattr(recorder, "segment", 0)
    builder.check(source, "type({v}) is int", "type({v}) is int")
    recorder.int_inputs[node] = IntInput(builder, source, value)
    return recorder.lazy_int(value, node, SIZE)


def pin_int_inputs(recorder: object) -> None:
    """Sizes stay static: every int input is guarded by its value (what the graph was recorded with)."""
    for entry in getattr(recorder, "int_inputs", {}).values():
        entry.pin()


def int_fake(env: ShapeEnv, value: int, source: LocalSource) -> Any:
    """The SymInt standing for an int input on the run on fake tensors (any sign, as TorchDynamo's
    unspecified ints)."""
    from torch.fx.experimental.symbolic_shapes import DimDynamic

    try:
        return env.create_unspecified_symint_and_symbol(value, source, DimDynamic.DYNAMIC)
    except Exception as exc:
        raise Unsupported(
            f"an int input cannot be symbolic ({type(exc).__name__}: {exc})", ReasonKind.DATA_DEPENDENT
        ) from None


#: why an int stays a constant in a compiled graph with host operations (keep_ints_constant)
HOST_PARTS = (
    "the compiled graph has host operations (a backward pass, an optimizer step), and its parts are "
    "compiled one by one with no symbolic int between them"
)


def keep_ints_constant(recorder: IntRecorder) -> list[str]:
    """A compiling backend and a graph with host operations: its tensor operations are compiled part
    by part (frontend/host_split.py), and an int computed from a symbolic int input between two parts
    has no value a part can be compiled with (a part failed to compile, and a fuzzed training step's
    backward through the output raised: `jitlab fuzz --backend aot_eager --seed 96`, program 572).
    The ints read are kept constants from the next capture on (ScalarHistory.constant); returns
    their places, empty when there is nothing to redo."""
    if recorder.lazy or not recorder.int_inputs or recorder.history is None:
        return []
    labels = [read.source.describe() for read in recorder.int_inputs.values()]
    for label in labels:
        recorder.history.scalars.constant[label] = HOST_PARTS
    return labels
