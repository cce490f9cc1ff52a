"""In-place changes and memory shared between tensors.

- A value read from module state is guarded before the call also after in-place changes of tensors
  the call's own operations allocated (`nn.ReLU(inplace=True)`, a quantizer rounding its own copy),
  and stays a check after the graph once anything else may have been changed in place.
  ParityBench's VITA-Group/GAN-Slimming `Conv2dQuant` reads `self.weight.abs().max().item()` after
  an autograd Function rounded its own tensor in place: jitlab.jit counted that as a possible change
  of the weight and specialised the graph on the value read, a break per call.
- Inputs that are different objects but share memory (`w.detach()`, `a[:]`) with an input the graph
  changes in place: two wrong results found while building the above, both older than it (a
  compiling backend read the input before the change; the check run before a mutating graph read a
  view before the change, also with backend eager).
"""

from __future__ import annotations

import copy

import pytest
import torch
from jit_helpers import assert_one_graph, check_program
from torch import nn

from jitlab.jit import jit


class _RoundTrip(torch.autograd.Function):
    """A straight-through quantizer: changes its own copy of the input in place."""

    @staticmethod
    def forward(ctx, x, scale):
        return x.div(scale).round_().mul_(scale)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class QuantConv(nn.Conv2d):
    def __init__(self):
        super().__init__(3, 4, 3, padding=1)

    def forward(self, x):
        x = _RoundTrip.apply(x.clamp(0.0, 4.0), 4.0 / 255)
        top = self.weight.abs().max().item()
        return self._conv_forward(x, _RoundTrip.apply(self.weight, top / 127), self.bias)


class ReluThenGate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = nn.ReLU(inplace=True)
        self.register_buffer("gain", torch.tensor(2.0))

    def forward(self, x):
        y = self.act(self.lin(x))
        if self.gain.item() > 1.0:
            y = y * self.gain
        y[0] = 0.0  # a write into a fresh tensor, then a second read
        return y + self.lin.bias.sum().item()


def _inputs(shape):
    return [((torch.randn(*shape),), {}) for _ in range(3)]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_state_read_after_a_function_changed_its_own_copy_is_guarded(backend):
    jitted = check_program(QuantConv, _inputs((1, 3, 6, 6)), backend=backend)
    assert_one_graph(jitted)
    assert any("read from self" in g for g in jitted.explain().graphs[0].guards)


def _twins(model: nn.Module) -> tuple[nn.Module, nn.Module, object]:
    """The model, an eager copy of it, and the model under jitlab.jit."""
    return model, copy.deepcopy(model), jit(model, backend="eager")


def test_state_read_after_inplace_relu_and_item_writes_is_guarded_and_follows_the_state():
    jitted = check_program(ReluThenGate, _inputs((3, 4)))
    assert_one_graph(jitted)
    guards = jitted.explain().graphs[0].guards
    assert sum("read from self" in g for g in guards) == 2, guards  # the gain and the bias
    model, eager, jitted = _twins(ReluThenGate())
    for change in range(3):
        for _ in range(2):
            x = torch.randn(3, 4)
            assert torch.equal(jitted(x), eager(x))
        for m in (model, eager):  # the other branch, then a new bias: each a guard miss
            with torch.no_grad():
                m.gain.fill_(0.5 if change == 0 else 3.0)
                m.lin.bias.add_(1.0)
    assert sum(g.hits for g in jitted.explain().graphs) >= 3 and jitted.explain().breaks == ()


class ChangesStateFirst(nn.Module):
    """A buffer changed in place before it is read: the read is a check after the graph."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.tensor(0.0))

    def forward(self, x):
        self.count.add_(1.0)
        return x * 2 if self.count.item() % 2 == 1 else x - 1


class ChangesItsArgument(nn.Module):
    """The argument is changed in place: on a later call it is the parameter the call reads."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))

    def forward(self, x):
        with torch.no_grad():
            x.add_(1.0)
            return x * 3 if self.w.sum().item() > 3.5 else x


class ReadThroughAnAlias(nn.Module):
    """`v` is computed from the weight, then changed through the fresh tensor it is a view of."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(4))

    def forward(self, x):
        with torch.no_grad():
            y = self.w * 1
            v = y[0]
            y.add_(x.sum())
            return x + 1 if v.item() > 0 else x - 1


def test_reads_after_changes_that_may_reach_them_stay_checks_after_the_graph():
    jitted = check_program(ChangesStateFirst, _inputs((2,)) * 2)
    assert jitted.explain().fallbacks == ()
    model, eager, jitted = _twins(ChangesItsArgument())
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(3)
            assert torch.equal(jitted(x.clone()), eager(x.clone()))
        # the parameter's memory as the argument (another tensor object, requires_grad False, as
        # the captured argument): the in-place add changes what the read reads
        assert torch.equal(jitted(model.w.detach()), eager(eager.w.detach()))
        assert torch.equal(model.w, eager.w)
        assert torch.equal(jitted(model.w[:].detach()), eager(eager.w[:].detach()))
    inputs = [((torch.full((2,), float(v)),), {}) for v in (1, 2, 3, -1, -2, -3)]
    jitted = check_program(ReadThroughAnAlias, inputs)
    report = jitted.explain()
    # the value read is re-checked after the graph (a guard recomputing it from the weight would
    # never match, and every call would be a new capture)
    assert report.fallbacks == () and sum(g.hits for g in report.graphs) >= 3, report


@torch.compiler.disable
def _eager_only(t):
    return t + 0


class AddsToItsArgument(nn.Module):
    """Changes its argument in place, then reads a parameter; with `split`, across a graph break."""

    def __init__(self, split: bool):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))
        self.split = split

    def forward(self, x):
        with torch.no_grad():
            x.add_(1.0)
            y = x * 1 + self.w * 1
            if self.split:
                y = _eager_only(y)
                x.mul_(2.0)
                y = y + self.w * x
            return y


@pytest.mark.parametrize("split", [False, True], ids=["one-graph", "break"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_inputs_sharing_memory_with_a_changed_input_are_guarded(backend, split):
    """AOTAutograd compiles for inputs that share no memory: given the parameter's own memory as the
    argument, its graph read the parameter before the change (3 where eager gives 4), also in the
    graphs of a call split at a break (11 where eager gives 20)."""
    model = AddsToItsArgument(split)
    eager = copy.deepcopy(model)
    jitted = jit(model, backend=backend)
    with torch.no_grad():
        # captured on the parameter's memory first, then on distinct tensors, then again aliased
        order = ["alias", "fresh", "fresh", "alias", "view", "fresh"]
        for kind in order:
            if kind == "fresh":
                x = torch.randn(3)
                pair = (x.clone(), x.clone())
            else:
                pair = (model.w.detach(), eager.w.detach())
                if kind == "view":
                    pair = (pair[0][:], pair[1][:])
            assert torch.equal(jitted(pair[0]), eager(pair[1])), kind
            assert torch.equal(model.w, eager.w)
    assert jitted.explain().fallbacks == ()
    assert sum(g.hits for g in jitted.explain().graphs) >= 2
    if backend != "eager":
        # torch 2.11's AOTAutograd raised on the aliased memory ("non-differentiable view input
        # mutations"): those entries run their graph as recorded, said; the fresh ones compile
        notes = [g.backend_note or "" for g in jitted.explain().graphs]
        assert any("shares memory with another input" in n for n in notes), notes
        assert any("shares memory" not in n for n in notes), notes


class AddsToItsArgumentThroughAView(nn.Module):
    """Changes part of its argument in place through a view, then reads a parameter."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))

    def forward(self, x):
        with torch.no_grad():
            x[:2].add_(1.0)
            return x * 1 + self.w * 2


def test_an_input_changed_through_a_view_while_sharing_memory_runs_its_graph_as_recorded():
    """The change reaches the input through a view (`x[:2].add_`): the entry captured with the
    parameter's own memory as `x` still runs uncompiled (torch 2.11's AOTAutograd raised there), the
    entries on fresh tensors compile, and every call gives eager's result over repeated calls."""
    model = AddsToItsArgumentThroughAView()
    eager = copy.deepcopy(model)
    jitted = jit(model, backend="aot_eager")
    for kind in ["fresh", "alias", "fresh", "alias", "fresh", "alias"]:
        if kind == "fresh":
            x = torch.randn(3)
            pair = (x.clone(), x.clone())
        else:
            pair = (model.w.detach(), eager.w.detach())
        assert torch.equal(jitted(pair[0]), eager(pair[1])), kind
        assert torch.equal(model.w, eager.w)
    report = jitted.explain()
    assert report.fallbacks == () and report.captures == 2, str(report)
    notes = sorted(g.backend_note or "" for g in report.graphs)
    assert notes[0] == "" and "shares memory with another input" in notes[1], notes
    assert all(g.hits == 2 for g in report.graphs), str(report)


class GatedByAView(nn.Module):
    """`b` is a view of `a` (or, after a rebinding, a copy): `a` changes in place, then Python decides
    on `b`'s data. Found by `jitlab fuzz` (seed 31, program 250): the check run before the graph read
    `b` before the change, and the call took the other branch than eager, also with backend eager."""

    def __init__(self):
        super().__init__()
        self.register_buffer("a", torch.linspace(-1.0, 2.0, 4))
        self.b = self.a[:]

    def forward(self, x):
        with torch.no_grad():
            self.a.mul_(-1.0)
        return x * 1.5 if self.b.sum() > 0 else x - 0.5


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_decision_on_a_view_of_a_changed_tensor_follows_the_change(backend):
    model = GatedByAView()
    eager = copy.deepcopy(model)
    assert eager.b.untyped_storage().data_ptr() == eager.a.untyped_storage().data_ptr()
    jitted = jit(model, backend=backend)
    for kind in ["view", "view", "view", "copy", "copy", "copy", "view", "copy"]:
        for m in (model, eager):
            m.b = m.a[:] if kind == "view" else m.a.clone()
        x = torch.randn(2, 4)
        assert torch.equal(jitted(x), eager(x)), kind
        assert torch.equal(model.a, eager.a)
    assert jitted.explain().fallbacks == ()


def _through_contiguous(x):
    with torch.no_grad():
        x.contiguous().mul_(-1.0)  # the same memory as `x`: it is contiguous
    return x * 2 if x.sum() > 0 else x - 1


def _through_to(x):
    with torch.no_grad():
        x.to(torch.float32).add_(4.0)  # `x` itself: already float32
    return x * 2 if x.sum() > 0 else x - 1


def _through_eval_dropout(x):
    with torch.no_grad():
        torch.nn.functional.dropout(x, 0.5, training=False).sub_(4.0)  # `x` itself
    return x * 2 if x.sum() > 0 else x - 1


@pytest.mark.parametrize("fn", [_through_contiguous, _through_to, _through_eval_dropout])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_changes_through_operations_that_give_the_same_memory_back(fn, backend):
    """The check run before a mutating graph followed only view operations to find what a change
    reaches: `x.contiguous().mul_(-1)` changed `x` unseen, and the call took the branch of the
    value before the change (a wrong result with every backend)."""
    jitted = jit(fn, backend=backend)
    for shift in (-3.0, 3.0, -3.0, 3.0, 0.5):
        x = torch.randn(4) + shift
        expected = fn(x.clone())
        assert torch.equal(jitted(x), expected), shift


@pytest.mark.parametrize("direct", [True, False], ids=["torch-method", "per-tensor"])
def test_the_memory_check_tells_views_and_offsets_from_distinct_tensors(direct):
    """Both ways of reading storage addresses (torch's method mapped over the inputs, or each
    tensor's own `untyped_storage`) give one answer: a view at an offset shares memory."""
    from jitlab.jit.entries.input_memory import SharedMemory

    base = torch.zeros(6)
    alone = SharedMemory((0,), ((0,),), direct)
    assert alone(base, torch.zeros(6), torch.zeros(0))
    assert not alone(base, base[3:])  # shares memory where none was captured
    assert alone(torch.zeros(2), base, base.detach()[1:])  # shared, but not by the changed input
    assert not SharedMemory((1,), ((1,),), direct)(torch.zeros(2), base, base.detach()[1:])
    shared = SharedMemory((0,), ((0, 1),), direct)  # captured: input 0 shared with input 1
    assert shared(base, base[2:], torch.zeros(1))
    assert not shared(base, torch.zeros(4))
