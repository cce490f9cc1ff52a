"""Writes to objects and tensors that existed before the call, and tensors reached in ways the
interpreter does not see directly: captured, replayed, and equal to eager call after call."""

from __future__ import annotations

import operator
import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F
from grad_helpers import check_grads
from jit_helpers import check_program

from jitlab.jit import jit


class ClipWeights(nn.Module):
    """Weight clipping as in WGAN code: `.data` assignment and in-place clamp of `.data`."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        self.fc.weight.data = self.fc.weight.data.clamp(-0.3, 0.3)
        for p in self.out.parameters():
            p.data.clamp_(-0.2, 0.2)
        return self.out(torch.relu(self.fc(x)))


class EmaUpdate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("shadow", torch.zeros(4, 4))
        self.decay = 0.9

    def forward(self, x):
        with torch.no_grad():
            self.shadow.mul_(self.decay).add_(self.fc.weight, alpha=1 - self.decay)
            self.fc.weight.mul_(0.999)
        return self.fc(x) + F.linear(x, self.shadow)


def test_data_writes_and_no_grad_updates_of_parameters():
    for make in (ClipWeights, EmaUpdate):
        for backend in ("eager", "aot_eager"):
            jitted = check_grads(make, lambda i: (torch.randn(3, 4),), calls=4, backend=backend)
            report = jitted.explain()
            assert not report.fallbacks and len(report.graphs) == 1 and report.graphs[0].hits == 3


class Holder:
    def __init__(self):
        self.mask = torch.tensor([1.0, 0.0, 1.0, 1.0])
        self.steps = 0


class PartialConv(nn.Conv2d):
    """NVIDIA's partial convolution: attributes rewritten on the first call and on shape changes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("mask_kernel", torch.ones(1, 1, *self.kernel_size))
        self.last_size = (None, None, None, None)
        self.update_mask = None
        self.mask_ratio = None

    def forward(self, x):
        if self.last_size != tuple(x.shape):
            self.last_size = tuple(x.shape)
            with torch.no_grad():
                mask = torch.ones(1, 1, x.shape[2], x.shape[3])
                self.update_mask = F.conv2d(mask, self.mask_kernel, padding=self.padding)
                self.mask_ratio = self.kernel_size[0] * self.kernel_size[1] / (self.update_mask + 1e-8)
                self.update_mask = torch.clamp(self.update_mask, 0, 1)
                self.mask_ratio = self.mask_ratio * self.update_mask
        return super().forward(x) * self.mask_ratio


class WritesOutside(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(PartialConv(1, 2, 3, padding=1), nn.ReLU())
        self.holder = Holder()
        self.stats = {"last": None}

    def forward(self, x):
        y = self.blocks(x)
        pick = operator.attrgetter("mask")  # a C callable reads holder.mask natively
        self.stats["last"] = y.mean().detach()
        return y.sum(dim=(1, 2)) * pick(self.holder)[:2].sum()


def test_attribute_writes_on_submodules_and_natively_read_tensors():
    jitted = check_grads(WritesOutside, lambda i: (torch.randn(2, 1, 4, 4),), calls=4)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 2 and report.graphs[1].hits == 2

    def change(model, i):
        if i == 3:
            model.holder.mask = torch.tensor([0.5, 0.5, 0.0, 0.0])  # a new tensor at the same place

    # the holder handed to native code is guarded deeply: its new mask is a graph input like the old
    jitted = check_grads(WritesOutside, lambda i: (torch.randn(2, 1, 4, 4),), calls=4, between=change)
    assert len(jitted.explain().graphs) == 2 and jitted.explain().graphs[1].hits == 2


class Registry(nn.Module):
    """An object reached only through a weak reference: guarded as what the reference refers to
    (`self.ref()`), as the program reads it."""

    def __init__(self):
        super().__init__()
        self.holder = Holder()
        self.ref = weakref.ref(self.holder)
        self.scales = [torch.tensor(2.0)]

    def forward(self, x):
        holder = self.ref()  # a C call: its result has no source
        holder.steps = x.shape[0]  # a write to an object of unknown origin unless found
        first = operator.itemgetter(0)(self.scales)
        return x * holder.mask * first


def test_objects_reached_natively_are_found_and_guarded():
    def change(model, i):
        if i == 2:
            model.holder.mask = torch.ones(4)
        if i == 3:
            model.holder = Holder()  # the weak reference now points to a dead object
            model.ref = weakref.ref(model.holder)

    jitted = check_grads(Registry, lambda i: (torch.randn(2, 4),), calls=5, between=change)
    report = jitted.explain()
    # the new mask (call 2) is read through the holder's source like any attribute; the new holder
    # (call 3) fails the identity guard of what the reference refers to
    assert not report.fallbacks and len(report.graphs) == 2 and report.misses == 1
    assert any("self.ref() is <Holder" in g for g in report.graphs[0].guards)
    assert any(g.startswith("TENSOR_MATCH: self.ref().mask") for g in report.graphs[0].guards)


class ClassTable(nn.Module):
    table = torch.linspace(0.5, 1.5, 4)

    def forward(self, x):
        return x * type(self).table + self.__class__.table.sum()


def test_class_attribute_tensors():
    jitted = check_grads(ClassTable, lambda i: (torch.randn(2, 4),), calls=3)
    assert not jitted.explain().fallbacks


class LazyPositions(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.cache = Holder()
        self.cache.table = None

    def forward(self, x):
        if not hasattr(self, "pos"):
            self.register_buffer("pos", torch.arange(x.shape[-1], dtype=x.dtype), persistent=False)
        if self.cache.table is None or self.cache.table.shape[0] != x.shape[0]:
            self.cache.table = torch.ones(x.shape[0], 1) * 0.5
        return self.fc(x) + self.pos + self.cache.table


def test_lazily_created_buffers_and_cached_tensors():
    jitted = check_grads(LazyPositions, lambda i: (torch.randn(2 + (i >= 3), 4),), calls=5)
    report = jitted.explain()
    assert not report.fallbacks
    # call 0 creates them (graph 0, never hit again), calls 1-2 read them (graph 1), call 3 has a
    # new batch size and recreates the table (graph 2), call 4 reads it (graph 3)
    assert [g.hits for g in report.graphs] == [0, 1, 0, 0]


class Lazy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.LazyLinear(3)
        self.bn = nn.LazyBatchNorm1d()

    def forward(self, x):
        return self.bn(self.fc(x))


def test_lazy_modules_are_captured_from_the_second_call():
    jitted = check_grads(Lazy, lambda i: (torch.randn(4, 5),), calls=4)
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 1 and report.graphs[0].hits == 2


def test_list_slices_and_tuple_keys():
    def f(xs, table):
        out = xs[0]
        for t in xs[1:]:
            out = out + t
        for t in xs[::-2]:
            out = out * t
        return out + table[("a", 1)] + sum(xs[-2:])

    table = {("a", 1): 2.0}
    inputs = [(([torch.randn(3) for _ in range(4)], table), {}) for _ in range(3)]
    jitted = check_program(lambda: f, inputs)
    assert not jitted.explain().fallbacks and jitted.explain().graphs[0].hits == 2


def test_missing_key_caught_by_the_program_is_guarded():
    cfg = {"a": 1.0}

    def f(x):
        try:
            k = cfg["scale"]
        except KeyError:
            k = cfg["a"]
        try:
            extra = cfg["items"][3]
        except IndexError:
            extra = 0.0
        return x * k + extra

    cfg["items"] = [1.0, 2.0]
    jitted = jit(f, backend="eager")
    x = torch.ones(2)
    assert torch.equal(jitted(x), f(x))
    cfg["scale"] = 5.0
    assert torch.equal(jitted(x), f(x))
    cfg["items"].extend([3.0, 4.0])
    assert torch.equal(jitted(x), f(x))
    assert len(jitted.explain().graphs) == 3


def test_reads_of_other_keys_after_an_item_write():
    state = {"count": 0.0, "scale": 2.0}

    def f(x):
        state["last"] = x.sum().detach()
        return x * state["scale"]

    jitted = jit(f, backend="eager")
    for scale in (2.0, 2.0, 3.0):
        state["scale"] = scale
        x = torch.randn(3)
        assert torch.equal(jitted(x), x * scale) and torch.equal(state["last"], x.sum())
    report = jitted.explain()
    assert not report.fallbacks and len(report.graphs) == 2


def test_a_tensor_set_as_an_attribute_of_an_input_is_an_input_of_the_graph():
    def f(x):
        return x * 2, x.mask  # an attribute set on the input tensor: read through the input

    jitted = jit(f, backend="eager")
    for step in range(3):
        x = torch.randn(3)
        x.mask = torch.full((3,), float(step))
        out = jitted(x)
        assert torch.equal(out[0], x * 2) and out[1] is x.mask
    report = jitted.explain()
    assert not report.fallbacks and report.captures == 1
    assert sum(g.hits for g in report.graphs) == 2
