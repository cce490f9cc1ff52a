"""Records the tensor operations of a running program into a `torch.fx.Graph`.

`GraphRecorder` is a `TorchFunctionMode` active while the interpreter runs: every torch function,
tensor method and operator runs on real tensors (so shapes are concrete) and becomes one node, its
tensor arguments mapped to the nodes that produced them. Outside tensors (arguments, parameters,
buffers) become placeholders when the tracer registers them. Calls that return Python values read
from tensor data (`.item()`, `bool(t)`, `tolist()`) or produce data-dependent shapes (`nonzero`)
are recorded as *speculations* (speculations.py): the graph also outputs their tensors and the cache
entry re-checks the values after running the graph (see codegen.py). With the eager backend (`lazy`),
such a float or int (a `DataInt`), and the sizes of data-dependent shapes, stay graph values while only
tensor operations read them; the speculation is activated (re-checked) only when Python code reads the
value.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx as fx
from torch.overrides import TorchFunctionMode

from jitlab.jit.graph.argument_generators import GeneratorSlot, slot_draw
from jitlab.jit.graph.autocast_nodes import autocast_state
from jitlab.jit.graph.data_values import DataInt, Speculation
from jitlab.jit.graph.dispatch_state import changed_state, kernel_flags
from jitlab.jit.graph.dynamic_scalars import FloatInput
from jitlab.jit.graph.failed_ops import fails_on_metadata
from jitlab.jit.graph.fresh_storage import FreshStorages, mutates, storage_address
from jitlab.jit.graph.lazy_sizes import lazy_sizes
from jitlab.jit.graph.number_types import type_may_change
from jitlab.jit.graph.numpy_values import (
    ArrayWatch,
    shares_constant_memory,
    snapshot_constant,
)
from jitlab.jit.graph.placeholder_names import placeholder_name
from jitlab.jit.graph.recording_tracer import RecordingTracer
from jitlab.jit.graph.speculations import speculate
from jitlab.jit.graph.torch_calls import (
    AUTOGRAD_HOOKS,
    RANDOM,
    SAFE_CONSTANT_TYPES,
    STATIC_METADATA,
    contains_tensor,
    data_dependent_shape,
    fixed_arity,
    full_reduction,
    getter_attr,
    is_metadata_read,
    is_tensor_method,
    method_recorded,
    name_of,
    nameable,
    returns_its_input,
    shape_of,
    tensors_in,
)
from jitlab.jit.graph.training_nodes import GradPresence, is_backward, record_backward, record_get_grad
from jitlab.jit.reasons import ReasonKind, training_problem


class GraphRecorder(TorchFunctionMode):
    """The torch-function mode that builds the fx graph."""

    def __init__(self, tracer: RecordingTracer) -> None:
        super().__init__()
        self.tracer = tracer
        self.graph = fx.Graph()
        self.node_of: dict[int, tuple[torch.Tensor, fx.Node]] = {}
        self.handles: dict[int, tuple[Any, fx.Node]] = {}  # ScriptObjects made by recorded operators
        self.placeholders: list[fx.Node] = []
        self.constants: dict[str, Any] = {}
        self.all_speculations: list[Speculation] = []  # made so far; those re-checked: `speculations`
        # while native code whose data-dependent decisions only decide whether it raises runs (the
        # constructor of a torch distribution validating its parameters): what raises otherwise
        self.raising_check: str | None = None
        self.active_indices: set[int] = set()  # indices in all_speculations re-checked on every hit
        # eager backend only: data-dependent floats and shapes stay in the graph until Python reads them
        self.lazy = False
        # id(float or DataInt) -> (value, node, what activating it means: a speculation index, -1 for a random
        # draw, roots (a size of a data-dependent shape) or None (arithmetic: the parents), parent entries)
        self.lazy_floats: dict[int, tuple[Any, ...]] = {}
        self.type_unstable: set[int] = set()  # ids of lazy numbers that may be int or float (number_types)
        # id(tensor) -> roots its shape depends on: speculation indices and lazy entries
        self.dynamic_roots: dict[int, frozenset[Any]] = {}
        self.consumed: list[int] = []  # ids of lazy values mapped to graph nodes, in order
        # > 0 while native code that reads Python values runs (`sum`, `max`, a library function): a number read
        # from tensor data now is read by it, so it is a speculation at once, not a graph value (native_calls.py)
        self.native_depth = 0
        self.has_mutation = False
        self.fresh = FreshStorages()  # which changes in place may have reached the program's state
        self.has_random = False
        self.grads = GradPresence()  # which tensors had a .grad, for the guards of .grad reads
        # inside a call recorded as one opaque node (a custom autograd Function's forward): tensor
        # operations run unrecorded, only whether they mutate or draw random numbers is noted
        self.opaque = 0
        self.opaque_mutation = False
        self.opaque_random = False
        self.op_count = 0
        self.paused = 0
        self.initial_grad = torch.is_grad_enabled()
        self.grad_enabled = self.initial_grad
        self.start_flags = kernel_flags()  # the call's start (graph/dispatch_state.py)
        self.dispatch_changed = False  # an operation was recorded under other dispatch state
        self.autocast_open: dict[int, tuple[object, fx.Node]] = {}  # regions entered (autocast_nodes.py)
        # autocast at the call's start: off, or on as the caller's region makes it (guarded as it is)
        self.autocast_start = autocast_state() if torch._C._is_any_autocast_enabled() else None
        self.autocast_expected = self.autocast_start
        self._placeholder_anchor: fx.Node | None = None
        self.arrays = ArrayWatch()  # numpy arrays read from tensors, which may share their memory

    # ------------------------------------------------------------ inputs
    def add_input(self, tensor: torch.Tensor, label: str) -> fx.Node:
        known = self.node_of.get(id(tensor))
        if known is not None:
            return known[1]
        node = self.new_placeholder(label)
        node.meta["example_value"] = tensor
        node.meta["storage"] = storage_address(tensor)  # before the call changed anything (input_memory.py)
        self.node_of[id(tensor)] = (tensor, node)
        self.grads.note(tensor)
        return node

    def new_placeholder(self, label: str) -> fx.Node:
        """A new graph input, after the ones made before it, named after `label`."""
        anchor = self._placeholder_anchor
        first = next(iter(self.graph.nodes), None) if anchor is None else None
        with self.graph.inserting_after(anchor) if anchor is not None else self.graph.inserting_before(first):
            node = self.graph.placeholder(f"in{len(self.placeholders)}_{placeholder_name(label)}")
        self._placeholder_anchor = node
        self.placeholders.append(node)
        return node

    def node_for(self, tensor: torch.Tensor) -> fx.Node:
        known = self.node_of.get(id(tensor))
        if known is not None:
            return known[1]
        return self.tracer.resolve_tensor(tensor)

    @contextlib.contextmanager
    def pause(self) -> Iterator[None]:
        """Run native code whose tensor calls must not be recorded (e.g. formatting for print)."""
        self.paused += 1
        try:
            yield
        finally:
            self.paused -= 1

    # ------------------------------------------------------------ speculations
    @property
    def speculations(self) -> list[Speculation]:
        """The speculations whose values the captured program depends on (checked on every hit)."""
        return [spec for n, spec in enumerate(self.all_speculations) if n in self.active_indices]

    def add_spec(self, spec: Speculation, active: bool) -> int:
        """Keep `spec` (at the line the program runs), re-checked on every hit if `active`; its index."""
        if spec.where is None:
            spec.where = self.tracer.running_line()
        self.all_speculations.append(spec)
        index = len(self.all_speculations) - 1
        if active:
            self.active_indices.add(index)
        return index

    def lazy_value(self, value: object) -> bool:
        return self.lazy_entry(value) is not None

    def lazy_entry(self, value: object) -> tuple[Any, ...] | None:
        """The entry of a data-dependent float or int still kept in the graph, or None."""
        t = type(value)
        if t is not float and t is not DataInt:
            return None
        entry = self.lazy_floats.get(id(value))
        return entry if entry is not None and entry[0] is value else None

    def lazy_entries_in(self, value: object, depth: int = 0) -> list[tuple[Any, ...]]:
        """The lazy entries of the data-dependent values inside `value` (nested containers too)."""
        t = type(value)
        if t is float or t is DataInt:
            entry = self.lazy_entry(value)
            return [entry] if entry is not None else []
        if depth >= 4:
            return []
        if t in (list, tuple, set, frozenset, torch.Size) or isinstance(value, tuple):
            return [e for item in value for e in self.lazy_entries_in(item, depth + 1)]
        if t is dict:
            return [e for item in value.values() for e in self.lazy_entries_in(item, depth + 1)]
        if t is slice:
            return [e for item in (value.start, value.stop, value.step) for e in self.lazy_entries_in(item)]
        return []

    def use(self, value: object) -> None:
        """Python code depends on `value`: a lazy data-dependent value inside it becomes a speculation."""
        for entry in self.lazy_entries_in(value):
            self.activate(entry)

    def made_data_ints(self) -> bool:
        """Whether the capture made a `DataInt` (which must not outlive it, see graph/plain.py)."""
        return any(type(entry[0]) is DataInt for entry in self.lazy_floats.values())

    def use_all(self) -> None:
        """Python code may have read any data-dependent value (native code was handed more than the
        tracer could look through): every one still kept in the graph becomes a speculation."""
        for entry in list(self.lazy_floats.values()):
            self.activate(entry)

    def add_draw(self, fn: Callable[..., Any], args: tuple, kwargs: dict, value: float) -> None:
        """A float drawn from Python's random that may stay in the graph (see Tracer._random_draw)."""

        def python_random_draw(_fn=fn, _args=args, _kwargs=kwargs):
            return _fn(*_args, **_kwargs)

        node = self.graph.call_function(python_random_draw, ())
        self.has_random = True
        self.lazy_floats[id(value)] = (value, node, -1, ())

    def lazy_arithmetic(self, fn: Callable[..., Any], args: tuple, result: object) -> Any:
        """Python arithmetic on lazy values: record it in the graph; the result is lazy too.

        Returns the (possibly re-wrapped) result, or None when the arithmetic cannot stay in the graph."""
        if self.native_depth:
            return None  # native code reads the result (see native_depth)
        t = type(result)
        if t is not float and t is not int and t is not DataInt:
            return None
        if not all(type(a) in (int, float, bool, DataInt) for a in args):
            return None
        parents = tuple(e for a in args if (e := self.lazy_entry(a)) is not None)
        if not parents:
            return None
        if t is float:
            if any(result is a for a in args):  # `max(1, f)`, `+f`: the operand itself
                result = result * 1.0  # the same value (exactly), another object: an entry of its own
        else:
            result = DataInt(result)
        node = self.graph.call_function(fn, tuple(self.graph_arg(a) for a in args))
        self.lazy_floats[id(result)] = (result, node, None, parents)
        if type_may_change(fn, args, self.type_unstable):
            self.type_unstable.add(id(result))
        return result

    def read_type(self, value: object) -> None:
        """Python looks at the type of `value`: a number whose type may change is read (number_types)."""
        if id(value) in self.type_unstable:
            self.use(value)

    def lazy_sum(self, args: tuple) -> Any:
        """`sum(numbers)` or `sum(numbers, start)` over a list or tuple holding data-dependent values."""
        if self.native_depth or not 1 <= len(args) <= 2 or type(args[0]) not in (list, tuple):
            return None
        numbers = (*args[0], *args[1:])
        if len(args[0]) > 256 or not all(type(a) in (int, float, DataInt) for a in numbers):
            return None
        result = sum(*args)
        t = type(result)
        if t is float and any(result is a for a in numbers):
            return None
        if t is int:
            result = DataInt(result)
        elif t is not float:
            return None
        node = self.graph.call_function(sum, tuple(self.graph_arg(a) for a in args))
        parents = tuple(e for a in numbers if (e := self.lazy_entry(a)) is not None)
        self.lazy_floats[id(result)] = (result, node, None, parents)
        if any(id(a) in self.type_unstable for a in numbers):
            self.type_unstable.add(id(result))
        return result

    def lazy_int(self, value: int, node: fx.Node, index: object) -> DataInt:
        """A new data-dependent int computed by `node`; `index` says what reading it activates."""
        result = DataInt(value)
        self.lazy_floats[id(result)] = (result, node, index, ())
        return result

    def lazy_shape(self, tensor: object, name: str, args: tuple) -> Any:
        """`tensor.shape`, `.size(...)`, `.numel()` or `len(tensor)` read by user code: for a tensor whose
        shape depends on data, sizes that stay graph values (`size` nodes); None for static shapes."""
        roots = self.dynamic_roots.get(id(tensor))
        if not self.lazy or not roots or not isinstance(tensor, torch.Tensor):
            return None
        if any(type(a) is not int for a in args) or len(args) > 1:
            return None
        node = self.node_for(tensor)
        with self.pause():  # the concrete sizes, read without counting as a use of the shape
            return lazy_sizes(self.graph, self.lazy_int, tensor, node, roots, name, args)

    def activate(self, lazy: tuple) -> None:
        """Python code reads the lazy value of entry `lazy`: what it was computed from is re-checked
        from now on (its speculation, the roots of a size, a float input's value, its parents)."""
        _value, _node, index, parents = lazy
        if isinstance(index, frozenset):
            self.activate_roots(index)
        elif type(index) is FloatInput:  # a float input (dynamic_scalars.py): guarded by value from now on
            index.activate()
        elif index is not None:
            if index < 0:
                self.tracer.problem(
                    "a value drawn from Python's random module is read by Python code",
                    ReasonKind.DATA_DEPENDENT,
                )
            else:
                self.active_indices.add(index)
        for parent in parents:
            self.activate(parent)

    def activate_roots(self, roots: frozenset[Any]) -> None:
        """Re-check the roots a data-dependent shape comes from (speculation indices, lazy entries)."""
        for root in roots:
            if type(root) is int:
                self.active_indices.add(root)
            else:
                self.activate(root)

    def use_shape(self, tensor: object) -> None:
        """Python code depends on the shape of `tensor`: a shape that depends on data is re-checked."""
        roots = self.dynamic_roots.get(id(tensor))
        if roots:
            self.activate_roots(roots)

    # ------------------------------------------------------------ recording
    def graph_arg(self, value: object) -> Any:
        """`value` as an argument of a graph node: tensors and lazy numbers by their nodes, containers
        item by item, other objects as constants of the graph (a lazy number used is noted in `consumed`)."""
        if isinstance(value, torch.Tensor):
            return self.node_for(value)
        t = type(value)
        if t is float or t is DataInt:
            entry = self.lazy_entry(value)
            if entry is not None:
                self.consumed.append(id(value))
                return entry[1]
            if t is DataInt:
                return int(value)
        if t in (list, tuple):
            return t(self.graph_arg(v) for v in value)
        if t is torch.Size:
            return tuple(self.graph_arg(v) for v in value)
        if t is dict:
            return {k: self.graph_arg(v) for k, v in value.items()}
        if t is slice:
            return slice(self.graph_arg(value.start), self.graph_arg(value.stop), self.graph_arg(value.step))
        if t in SAFE_CONSTANT_TYPES:
            return value
        if t is torch.Generator:  # kept as the object itself: the entry must get the same one
            self.tracer.generator_kept(value)
        handle = self.handles.get(id(value))
        if handle is not None and handle[0] is value:
            return handle[1]
        # anything else, subclasses included (numpy's float64 is a float whose repr `np.float64(0.5)`
        # would be written into the graph's code, where `np` is not defined): an attribute of the graph
        name = f"_jit_const{len(self.constants)}"
        self.constants[name] = snapshot_constant(value)
        return self.graph.get_attr(name)

    def sync_grad_mode(self) -> None:
        """Record a switch of grad mode when it changed since the last node (before each new node),
        and refuse a node made under other kernel flags than the call's start, or another autocast
        state than the recorded `torch.autocast` regions make: they act below the operations
        recorded, and a graph would replay them under the start's (graph/dispatch_state.py says why).
        The call runs eagerly, with the line in explain()."""
        now = torch.is_grad_enabled()
        if now != self.grad_enabled:
            self.graph.call_function(torch._C._set_grad_enabled, (now,))
            self.grad_enabled = now
        if not self.dispatch_changed:
            changed = changed_state(self.start_flags, self.autocast_expected)
            if changed is not None:
                self.dispatch_changed = True
                self.tracer.problem(
                    f"a tensor operation runs under {changed}, which jitlab.jit does not capture: "
                    "it acts below the operations recorded",
                    ReasonKind.GLOBAL_STATE,
                )

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.paused:
            return func(*args, **kwargs)
        if self.arrays.arrays:
            self._check_arrays()
        getter = getter_attr(func)
        name = getter or name_of(func)
        if self.opaque:
            self.opaque_mutation = self.opaque_mutation or mutates(name, kwargs)
            self.opaque_random = self.opaque_random or name in RANDOM
            out = func(*args, **kwargs)
            self.fresh.note(getter, name, args, kwargs, out)
            return out
        if is_metadata_read(getter, name, args, kwargs):
            if self.lazy_floats:
                self.use((args, kwargs))  # e.g. x.size(k): the answer is a plain int
            if self.dynamic_roots and args and name not in STATIC_METADATA:
                self.use_shape(args[0])
            return func(*args, **kwargs)
        if getter == "grad" or is_backward(func):  # training_nodes.py
            return record_get_grad(self, args[0]) if getter else record_backward(self, func, args, kwargs)
        if name in AUTOGRAD_HOOKS:
            what = "a backward pass (loss.backward())" if name == "backward" else f"tensor.{name}()"
            self.tracer.problem(*training_problem(what))
            with self.pause():
                return func(*args, **kwargs)
        if name == "__iter__" and args and isinstance(args[0], torch.Tensor):
            return iter(self.__torch_function__(torch.unbind, types, (args[0],), {}))
        self.sync_grad_mode()
        try:
            out = func(*args, **kwargs)
        except Exception as exc:
            # it may have failed because of tensor values (an index out of range): if the program
            # catches it, the path taken depends on data the guards do not see (failed_ops.py)
            if not fails_on_metadata(self, func, args, kwargs, exc):
                self.tracer.problem(
                    f"tensor operation {name} raised {type(exc).__name__} during capture",
                    ReasonKind.USER_EXCEPTION,
                )
            raise
        try:
            if out is not None and not contains_tensor(out):
                return self.record_speculation(func, name, args, kwargs, out)
            else:
                self.record_op(func, getter, name, args, kwargs, out)
        except Exception as exc:  # a recording bug must cost the cache entry, never the user's call
            self.tracer.problem(
                f"internal error while recording {name}: {type(exc).__name__}: {exc}", ReasonKind.INTERNAL
            )
        return out

    def bookkeeping(
        self, name: str, fallback: object, record: Callable[..., object], *args: object
    ) -> object:
        """`record(*args)`, the recording of a number computed from sizes or data: a bug there must
        cost the capture, never the user's call (the call may have changed outside state already and
        cannot run again), so it is noted as an internal error and `fallback` returned: the value eager
        computes, or None to let the caller go on natively."""
        try:
            return record(*args)
        except Exception as exc:
            self.tracer.problem(
                f"internal error while recording {name}: {type(exc).__name__}: {exc}", ReasonKind.INTERNAL
            )
            return fallback

    def record_opaque_call(
        self, fn: Callable[..., Any], args: tuple, kwargs: dict, out: object, mutates: bool, random: bool
    ) -> None:
        """One node `fn(*args, **kwargs)` standing for a call whose inside was not recorded (see
        autograd_functions.py); its tensor results are bound to the node's outputs."""
        self.sync_grad_mode()
        self.op_count += 1
        roots: frozenset[Any] = frozenset()
        if self.dynamic_roots:
            for value in tensors_in((args, kwargs)):
                roots = roots | self.dynamic_roots.get(id(value), frozenset())
        node = self.graph.call_function(fn, self.graph_arg(tuple(args)), self.graph_arg(dict(kwargs)))
        self.has_mutation = self.has_mutation or mutates
        self.has_random = self.has_random or random
        if roots and isinstance(out, (tuple, list)):
            self.activate_roots(roots)
        self.bind(out, node, False, roots)

    def record_op(self, func, getter, name, args, kwargs, out) -> None:
        """One node for a torch call whose result holds tensors, bound to them (`bind`), with the roots
        their shapes depend on."""
        if returns_its_input(name, args, kwargs, out):  # `w.float()` of a float32 `w`: w's node stays
            return
        self.op_count += 1
        roots: frozenset[Any] = frozenset()
        if self.dynamic_roots:
            for value in tensors_in((args, kwargs)):
                roots = roots | self.dynamic_roots.get(id(value), frozenset())
        if self.lazy_floats:
            # a data-dependent int among the arguments may decide the output's shape (a float only
            # for arange: `x * f` has the shape of x)
            entries = self.lazy_entries_in((args, kwargs))
            if name not in ("arange", "range"):
                entries = [e for e in entries if type(e[0]) is DataInt]
            roots = roots | frozenset(entries)
        if roots and full_reduction(name, args, kwargs):
            roots = frozenset()  # a 0-d result whatever the input's shape: nothing to re-check
        if roots and isinstance(out, (tuple, list)) and not fixed_arity(out):
            self.activate_roots(roots)  # how many tensors come out may depend on the shape
        slot = self._generator_slot(kwargs)
        if slot is not None:  # drawn from a generator of the call's arguments (argument_generators.py)
            rest = {k: v for k, v in kwargs.items() if k != "generator"}
            draw = slot_draw(func, slot, name)
            node = self.graph.call_function(draw, self.graph_arg(tuple(args)), self.graph_arg(rest))
        elif getter is not None:
            node = self.graph.call_function(getattr, (self.graph_arg(args[0]), getter))
        elif args and isinstance(args[0], torch.Tensor) and is_tensor_method(func, name):
            node = self.graph.call_method(
                method_recorded(name, args, kwargs), self.graph_arg(tuple(args)), self.graph_arg(dict(kwargs))
            )
        else:
            node = self.graph.call_function(
                nameable(func), self.graph_arg(tuple(args)), self.graph_arg(dict(kwargs))
            )
            if isinstance(out, torch.Tensor) and shares_constant_memory(name, args):
                node = self.graph.call_method("clone", (node,))
        if name in RANDOM or (name in ("dropout", "feature_dropout") and kwargs.get("train", True)):
            self.has_random = True
        self.has_mutation = self.fresh.note(getter, name, args, kwargs, out) or self.has_mutation
        self.bind(out, node, data_dependent_shape(name, args, kwargs), roots)

    def _generator_slot(self, kwargs: dict) -> GeneratorSlot | None:
        """The slot an operation's `generator=` is drawn through, when it is a generator of the
        call's arguments that the tracer lets the entry's guards put there; else None."""
        generator = kwargs.get("generator")
        if type(generator) is not torch.Generator:
            return None
        return self.tracer.generator_slot(generator)

    def bind(self, out: object, node: fx.Node, shape_check: bool, roots: frozenset[Any]) -> None:
        """Map the tensors of `out` (nested tuples and lists: `getitem` nodes) to `node`, with the roots
        their shape depends on; `shape_check` makes the shape of each a speculation of its own."""
        if isinstance(out, torch.Tensor):
            self.node_of[id(out)] = (out, node)
            node.meta["example_value"] = out
            if shape_check:
                shape = tuple(out.shape)
                spec = Speculation(shape_of, [node], shape, f"shape of {node.name} == {shape}")
                roots = roots | {self.add_spec(spec, active=not self.lazy)}
            if roots:
                self.dynamic_roots[id(out)] = roots
            else:
                self.dynamic_roots.pop(id(out), None)
        elif isinstance(out, (tuple, list)):
            for i, item in enumerate(out):
                if isinstance(item, (torch.Tensor, tuple, list)):
                    self.bind(item, self.graph.call_function(operator.getitem, (node, i)), shape_check, roots)

    def record_speculation(self, func, name, args, kwargs, out) -> Any:
        """Record a call that returns a Python value read from tensor data (speculations.py); returns
        the value the program gets. A method, so that the recorder's mixins can wrap it."""
        return speculate(self, func, name, args, kwargs, out)

    def finish(self, output_nodes: list[fx.Node]) -> None:
        """Leave the grad mode as the program left it, and add the output node."""
        self._check_arrays()
        self.sync_grad_mode()
        if self.autocast_open:
            self.tracer.problem(
                "a torch.autocast entered inside the call is still on when it returns",
                ReasonKind.GLOBAL_STATE,
            )
        self.graph.output(tuple(output_nodes))

    def _check_arrays(self) -> None:
        """A numpy array read from a tensor was written to: the tensor changed, unrecorded."""
        if self.arrays.take_change():
            message = "a numpy array sharing memory with a tensor was changed by the program"
            self.tracer.problem(message, ReasonKind.SIDE_EFFECT)
