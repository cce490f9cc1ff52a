"""Speculations: a torch call that returns a Python value read from tensor data (`.item()`,
`bool(t)`, `tolist()`, a numpy array) is recorded here, apart from the recording of tensor operations
in recorder.py, which calls `speculate` for it.

The value becomes a `Speculation` (data_values.py): the graph also outputs the tensors it was read
from and the cache entry re-checks the value after running the graph (codegen.py). With the eager
backend (`lazy`) a float, an int (a `DataInt`) or a list of them read once by `.item()` or `tolist()`
stays a graph value instead, and the speculation is activated (re-checked) only when Python code reads
the value (`GraphRecorder.activate`). A read of module state before any change is guarded before the
call (state_reads.py).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, Protocol

import torch
import torch.fx as fx

from jitlab.jit.graph.data_values import DataInt, Speculation, bits_key, has_nan
from jitlab.jit.graph.numpy_values import ArrayWatch, KeyedCheck, array_key, is_ndarray
from jitlab.jit.graph.state_reads import StateRecorder, guard_state_read
from jitlab.jit.graph.torch_calls import contains_tensor, numbers_only, read_node
from jitlab.jit.reasons import ReasonKind


class SpeculatingRecorder(StateRecorder, Protocol):
    """What recording a speculation uses of the graph recorder (recorder.py, which imports this
    module); tests/jit/test_jit_owned_state.py checks that the real recorder has every member."""

    graph: fx.Graph
    lazy: bool
    native_depth: int
    raising_check: str | None
    arrays: ArrayWatch
    handles: dict[int, tuple[Any, fx.Node]]
    lazy_floats: dict[int, tuple[Any, ...]]

    def use(self, value: object) -> None: ...

    def use_shape(self, tensor: object) -> None: ...

    def node_for(self, tensor: torch.Tensor) -> fx.Node: ...

    def graph_arg(self, value: object) -> Any: ...

    def add_spec(self, spec: Speculation, active: bool) -> int: ...

    def lazy_int(self, value: int, node: fx.Node, index: object) -> DataInt: ...


def speculate(
    recorder: SpeculatingRecorder, func: Callable[..., Any], name: str, args: tuple, kwargs: dict, out: object
) -> Any:
    """Record a call that returns a Python value read from tensor data; returns the value the
    program gets (a `DataInt` for an int kept in the graph)."""
    if out is NotImplemented:  # `t == "src"`: the argument types decide it, not tensor data
        return out
    if recorder.lazy_floats:
        recorder.use((args, kwargs))  # the re-check below would run with the captured values
    tensors: list[torch.Tensor] = []
    positions: list[tuple[str, Any]] = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            positions.append(("arg", i))
            tensors.append(a)
        elif contains_tensor(a):
            recorder.tracer.problem(
                f"data-dependent call {name} with nested tensor arguments", ReasonKind.DATA_DEPENDENT
            )
            return out
    if not tensors and not contains_tensor(kwargs):
        # no tensor among the arguments (`torch.device("cpu")`, `torch.broadcast_shapes(...)`):
        # the value is computed from Python values the capture already guards, no tensor data
        if isinstance(out, torch.ScriptObject):
            # a handle made by an operator (`record_function`'s enter): a node of the graph, so
            # that the operators it is handed to (its exit) get the one made on each call
            node = recorder.graph.call_function(
                func, recorder.graph_arg(tuple(args)), recorder.graph_arg(dict(kwargs))
            )
            recorder.handles[id(out)] = (out, node)
        return out
    if not tensors or any(contains_tensor(v) for v in kwargs.values()):
        recorder.tracer.problem(
            f"data-dependent call {name} with unusual arguments", ReasonKind.DATA_DEPENDENT
        )
        return out
    base, kw = list(args), dict(kwargs)

    def check(*values, _base=base, _pos=positions, _kw=kw, _func=func):
        call = list(_base)
        for (_, i), v in zip(_pos, values):
            call[i] = v
        return _func(*call, **_kw)

    expected = out
    if is_ndarray(out):  # compared by dtype, shape and bytes (numpy_values.py)
        expected = array_key(out)
        check = KeyedCheck(check)
        if expected is not None:
            recorder.arrays.add(out, expected)
    elif has_nan(out):  # nan != nan: compared by its bits
        expected = bits_key(out)
        check = KeyedCheck(check, bits_key)
    try:
        comparable = expected is not None and bool(expected == expected)
    except Exception:
        comparable = False
    if not comparable:
        recorder.tracer.problem(
            f"data-dependent call {name} returned a value that cannot be compared",
            ReasonKind.DATA_DEPENDENT,
        )
        return out
    nodes = [recorder.node_for(t) for t in tensors]
    for t in (t for t in tensors if t.dim()):  # a 0-d shape is (), whatever sizes made it
        recorder.use_shape(t)
    text = f"{name}(...) == {out!r:.60}".replace("\n", " ")
    if len(nodes) == 1 and len(args) == 1 and guard_state_read(recorder, nodes[0], check, expected, text):
        return out  # module state read before any change: guarded before the call
    spec = Speculation(check, nodes, expected, text, raises=recorder.raising_check)
    if name == "__bool__" and type(out) is bool and len(nodes) == 1 and len(args) == 1 and not kwargs:
        spec.truth = nodes[0]
    # read by native code as it is made (native_depth): re-checked from the start. With a
    # compiling backend only a float read by .item() or float() stays lazy (graph/result_reads.py)
    single = not recorder.native_depth and len(nodes) == 1 and len(args) == 1 and not kwargs
    float_reads = ("item", "__float__", "tolist") if recorder.lazy else ("item", "__float__")
    lazy_float = single and type(out) is float and name in float_reads
    kept = single and recorder.lazy  # ints and lists stay graph values with the eager backend only
    lazy_int = kept and type(out) is int and name in ("item", "__int__", "__index__", "tolist")
    lazy_list = kept and type(out) is list and name == "tolist" and numbers_only(out, [0])
    index = recorder.add_spec(spec, active=not (lazy_float or lazy_int or lazy_list))
    if lazy_list:
        return _lazy_list(recorder, out, recorder.graph.call_method("tolist", (nodes[0],)), index)
    if lazy_float:
        recorder.lazy_floats[id(out)] = (out, read_node(recorder.graph, name, nodes[0]), index, ())
    elif lazy_int:
        return recorder.lazy_int(out, read_node(recorder.graph, name, nodes[0]), index)
    return out


def _lazy_list(recorder: SpeculatingRecorder, items: list, node: fx.Node, index: int) -> list:
    """`tolist()` of a tensor whose values only flow on to tensor operations: a list (of lists) of
    data-dependent floats and ints, each taken from the graph's own `tolist` result. Its length is
    the tensor's shape, which the guards check."""
    result: list[Any] = []
    for i, item in enumerate(items):
        item_node = recorder.graph.call_function(operator.getitem, (node, i))
        if type(item) is list:
            result.append(_lazy_list(recorder, item, item_node, index))
        elif type(item) is float:
            recorder.lazy_floats[id(item)] = (item, item_node, index, ())
            result.append(item)
        else:
            result.append(recorder.lazy_int(item, item_node, index))
    return result
