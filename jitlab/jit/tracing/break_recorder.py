"""The graph recorder with graph breaks and symbolic sizes: `BreakRecorder` notes where each
speculation is made (a possible data break, see jitlab.jit.breaks.book), which nodes have effects,
which segment created each placeholder, and (`SymbolicSizes`, see jitlab.jit.graph.shapes) keeps sizes
read by Python as graph values. A comparison of a number still kept in the graph is recorded in the
graph and re-checked (`lazy_decision`).
"""

from __future__ import annotations

import contextlib
import math
import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

from jitlab.jit.breaks.book import BreakBook, CaptureView
from jitlab.jit.graph.compiled_ints import CompiledInts
from jitlab.jit.graph.data_values import DataInt, Speculation
from jitlab.jit.graph.dynamic_scalars import FloatInput, only_float_inputs
from jitlab.jit.graph.recorder import GraphRecorder
from jitlab.jit.graph.result_reads import ResultReads
from jitlab.jit.graph.shape_history import ShapeHistory
from jitlab.jit.graph.shapes import VARIABLE_ARITY, SymbolicSizes
from jitlab.jit.reasons import ReasonKind

COMPARISONS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.eq: "==",
               operator.ne: "!="}  # fmt: skip
_NUMBERS = (int, float, bool, DataInt)


def _same(value: object) -> Any:
    return value


class BreakRecorder(CompiledInts, ResultReads, SymbolicSizes, GraphRecorder):
    """The graph recorder, noting where speculations are made, which nodes have effects, which
    segment created each placeholder, (SymbolicSizes) the sizes Python reads, and (ResultReads) the
    floats read from data that only reach the result, and (CompiledInts) the ints read from data that
    only reach arithmetic, with a compiling backend."""

    def __init__(self, capture: CaptureView, lazy: bool, history: ShapeHistory | None) -> None:
        super().__init__(capture.tracer)
        self.capture = capture
        self.lazy = lazy
        self.segment = 0
        self.fixed_arity = False
        self.init_sizes(history)

    @property
    def book(self) -> BreakBook | None:
        """The capture's break book."""
        return self.capture.book

    def note_segment(self, segment: int) -> None:
        self.segment = segment

    def add_input(self, tensor: torch.Tensor, label: str) -> fx.Node:
        known = self.node_of.get(id(tensor))
        node = super().add_input(tensor, label)
        if known is None:
            node.meta["jit_segment"] = self.segment
            self.note_input(node, tensor, label)
        return node

    def lazy_shape(self, tensor: object, name: str, args: tuple) -> Any:
        size = self.symbolic_shape(tensor, name, args)
        return size if size is not None else super().lazy_shape(tensor, name, args)

    def activate(self, lazy: tuple) -> None:
        """A size-derived number Python reads becomes a fact on the sizes (shapes.py `fix_size`, checked
        by the guards) instead of being re-checked by value."""
        if not self.fix_size(lazy):
            super().activate(lazy)

    def activate_roots(self, roots: frozenset[Any]) -> None:
        """While an operation whose number of results cannot depend on sizes is recorded (`fixed_arity`),
        the size-derived roots of its input are not re-checked."""
        if self.fixed_arity:
            roots = frozenset(r for r in roots if not (type(r) is tuple and self.size_derived(r)))
        super().activate_roots(roots)

    def lazy_decision(self, fn: Callable[..., Any], args: tuple) -> bool | None:
        """Python compares (or tests) a number still kept in the graph: the graph computes the
        comparison and the entry re-checks its outcome, not the number itself, so one entry serves
        every value on the same side (`if loss.item() > 1.0`). For sizes the outcome is a fact,
        checked by the guards before the graph runs (`if x.shape[0] > 1`)."""
        if self.has_symbols() and (fn is operator.eq or fn is operator.ne):
            decided = self.sequence_decision(fn, args)
            if decided is not None:
                return decided
        if not all(type(a) in _NUMBERS for a in args):
            return None
        entries = [self.lazy_entry(a) for a in args]
        if not any(e is not None for e in entries):
            return None
        if not self.lazy:
            outcome = self._float_input_outcome(fn, args, entries)
            if outcome is not None:
                return outcome
        if (
            self.book is not None
            and self.book.calls
            and all(e is None or only_float_inputs(e) for e in entries)
        ):
            # after a graph break a decision would split the graph again; on outside floats only (a
            # weight decay read after a scheduler's break) they are guarded by value instead
            for entry in entries:
                if entry is not None:
                    self.activate(entry)
            return None
        decided = (
            self.size_decision(fn, args, tuple(self.graph_arg(a) for a in args))
            if self.has_symbols()
            else None
        )
        if decided is not None or not self.lazy:
            return decided
        result = fn(*args)
        if type(result) is not bool:
            return None
        names = [self._origin(a) for a in args]
        node = self.graph.call_function(fn, tuple(self.graph_arg(a) for a in args))
        if fn is operator.truth:
            text = f"bool({names[0]}) is {result}"
        else:
            text = f"{names[0]} {COMPARISONS[fn]} {names[1]} is {result}"
        self.tracer.deciding = True
        try:
            self.add_spec(Speculation(_same, [node], result, text, truth=node), active=True)
        finally:
            self.tracer.deciding = False
        return result

    def _float_input_outcome(self, fn: Callable[..., Any], args: tuple, entries: list) -> bool | None:
        """With a compiling backend, a float input compared with a constant (`if momentum != 0:` in
        SGD, whose momentum OneCycleLR changes every step): guarded by the outcome, which the entry
        computes from the value the call starts with, not by the value (a capture per value). None
        for anything else (arithmetic on the input, two inputs: guarded by value as before)."""
        if fn not in COMPARISONS and fn is not operator.truth:
            return None
        found = [(i, e) for i, e in enumerate(entries) if e is not None]
        if len(found) != 1 or type(found[0][1][2]) is not FloatInput:
            return None
        position, entry = found[0]
        others = [a for i, a in enumerate(args) if i != position]
        if not all(type(o) in (int, float) and math.isfinite(o) for o in others):
            return None
        result = fn(*args)
        if type(result) is not bool:
            return None
        if fn is operator.truth:
            test = "bool({v})"
        else:
            sides = ["{v}" if i == position else repr(a) for i, a in enumerate(args)]
            test = f"{sides[0]} {COMPARISONS[fn]} {sides[1]}"
        index = entry[2]
        index.builder.check(index.source, f"({test}) is {result}", f"{test} is {result}")
        return result

    def _origin(self, value: object, depth: int = 0) -> str:
        """How a number kept in the graph was read from tensor data, for the explanation."""
        entry = self.lazy_entry(value)
        if entry is None:
            return repr(value)
        index, parents = entry[2], entry[3]
        if type(index) is int and index >= 0:
            return self.all_speculations[index].text.split(" == ")[0]
        if index == -1:
            return "a draw from Python's random"
        if isinstance(index, frozenset):
            return "a size of a data-dependent shape"
        if parents and depth < 4:
            return f"(arithmetic on {self._origin(parents[0][0], depth + 1)})"
        return repr(value)

    def add_spec(self, spec: Speculation, active: bool) -> int:
        """Also note the speculation as a possible data break in the break book."""
        index = super().add_spec(spec, active)
        if self.book is not None:
            try:
                self.book.data_site(spec)
            except Exception as exc:  # a bug here must cost the break, never the user's call
                self.tracer.problem(
                    f"internal error noting a data-dependent value: {type(exc).__name__}: {exc}",
                    ReasonKind.INTERNAL,
                )
        return index

    def record_op(self, func, getter, name, args, kwargs, out) -> None:
        """Also note where the nodes were recorded and which have effects; sizes stay symbolic through
        an operation with a fixed number of results."""
        last = next(iter(reversed(self.graph.nodes)), None)
        mutation, random = self.has_mutation, self.has_random
        self.has_mutation = self.has_random = False
        # an operation returning a tuple whose length cannot depend on sizes keeps them symbolic, and
        # so does one whose number of results is kept as a fact on the sizes (`split`, `chunk`)
        self.fixed_arity = (
            self.has_symbols()
            and isinstance(out, (tuple, list))
            and (name not in VARIABLE_ARITY or self._arity_kept(name, args, kwargs))
        )
        pinning = self.reading(f"the number of results of {name} depends on it")
        try:
            with pinning if name in VARIABLE_ARITY else contextlib.nullcontext():
                super().record_op(func, getter, name, args, kwargs, out)
        finally:
            self.fixed_arity = False
            self._note_where(last)
            effect = self.has_mutation or self.has_random
            self.has_mutation, self.has_random = mutation or self.has_mutation, random or self.has_random
            if effect:
                for node in reversed(self.graph.nodes):
                    if node is last or node.op == "placeholder":
                        break
                    node.meta["jit_effect"] = True

    def _note_where(self, last: fx.Node | None) -> None:
        """The user's line that recorded the nodes after `last`, for a pin's note (shapes.py)."""
        node = next(iter(reversed(self.graph.nodes)), None)
        if node is not last and node is not None:
            frames = getattr(self.tracer.interpreter, "frames", None)
            if frames:
                node.meta["jit_where"] = f"{frames[-1].code.co_filename}:{frames[-1].current_line()}"

    def lazy_arithmetic(self, fn: object, args: tuple, result: object) -> Any:
        last = next(iter(reversed(self.graph.nodes)), None)
        out = super().lazy_arithmetic(fn, args, result)
        self._note_where(last)  # `float(n)` of an int input may fix it on the fake run
        return out

    def _arity_kept(self, name: str, args: tuple, kwargs: dict) -> bool:
        """Whether the number of results of a splitting operation on a tensor with symbolic sizes is
        kept as a fact on the split dimension's size (shapes.arity_fact), not pinning every size."""
        roots = self.dynamic_roots.get(id(args[0])) if args and isinstance(args[0], torch.Tensor) else None
        return bool(roots) and self.arity_fact(name, args, kwargs)

    def add_draw(self, fn: object, args: tuple, kwargs: dict, value: float) -> None:
        super().add_draw(fn, args, kwargs, value)
        next(iter(reversed(self.graph.nodes))).meta["jit_effect"] = True
