"""Python reading the data of a parameter or buffer before the call changed any tensor is guarded
before the call: one graph, no re-check after it, and a change of the state is a new capture.

jitlab.jit used to specialise the graph on such a value and re-check it after the graph, which
`jitlab capture` counts as a break (ParityBench's Eric-mingjie/network-slimming `channel_selection`
picks channels with `np.argwhere(self.indexes.data.cpu().numpy())`)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from jitlab.jit import jit


class ChannelSelection(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.indexes = nn.Parameter(torch.ones(channels))

    def forward(self, x):
        selected = np.squeeze(np.argwhere(self.indexes.data.cpu().numpy()))
        if selected.size == 1:
            selected = np.resize(selected, (1,))
        return x[:, selected]


class GateOnBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("enabled", torch.tensor(True))

    def forward(self, x):
        if self.enabled:
            x = x * 2
        return x + 1


class GateAfterUpdate(GateOnBuffer):
    """The buffer is written before it is read: the read is a check after the graph, as before."""

    def forward(self, x):
        self.enabled.copy_(x.sum() > 0)
        return super().forward(x)


def test_a_parameter_read_by_numpy_is_guarded_before_the_call_and_makes_one_graph():
    model = ChannelSelection(4)
    jitted = jit(model, backend="eager")
    for _ in range(3):
        x = torch.randn(2, 4, 3)
        assert torch.equal(jitted(x), model(x))
    report = jitted.explain()
    assert report.breaks == () and report.fallbacks == () and report.graphs[0].hits == 2
    assert any("read from self" in guard for guard in report.graphs[0].guards), report.graphs[0].guards
    with torch.no_grad():
        model.indexes[1] = 0.0  # other channels: the guard misses and the new capture picks them
    x = torch.randn(2, 4, 3)
    assert torch.equal(jitted(x), x[:, [0, 2, 3]])
    assert jitted.explain().captures == 2


def test_a_buffer_read_by_bool_is_guarded_and_a_read_after_a_write_is_still_checked_after():
    model = GateOnBuffer()
    jitted = jit(model, backend="eager")
    for enabled in (True, True, False, False):
        model.enabled.fill_(enabled)
        x = torch.randn(3)
        assert torch.equal(jitted(x), model(x))
    report = jitted.explain()
    assert report.breaks == () and report.captures == 2 and sum(g.hits for g in report.graphs) == 2

    updating = GateAfterUpdate()
    jitted = jit(updating, backend="eager")
    for _ in range(3):
        x = torch.randn(3)
        state = updating.enabled.clone()
        expected = GateAfterUpdate.forward(_copy(updating, state), x)
        assert torch.equal(jitted(x), expected)
    assert jitted.explain().breaks != ()  # specialised on the value the graph wrote, re-checked


def _copy(model, state):
    twin = GateAfterUpdate()
    twin.enabled.copy_(state)
    return twin


def test_an_input_read_is_still_a_check_after_the_graph():
    def read_input(x):
        return x * 2 if bool(x.sum() > 0) and x[0].item() > -10 else x

    jitted = jit(read_input, backend="eager")
    for _ in range(3):
        x = torch.randn(3)
        assert torch.equal(jitted(x), read_input(x))
    assert not any("read from" in g for graph in jitted.explain().graphs for g in graph.guards)


class Binarizer(nn.Module):
    """openvinotoolkit/nncf's binarizers: enabled by an int buffer, read through an index and `==`."""

    def __init__(self):
        super().__init__()
        self.register_buffer("enabled", torch.IntTensor([0]))

    def forward(self, x):
        if self.enabled[0] == 1:
            return torch.sign(x)
        return x


class StagedMask(nn.Module):
    """CondenseNet's LearnedGroupConv: a decision on a comparison of a buffer with a Python number."""

    def __init__(self):
        super().__init__()
        self.register_buffer("stage", torch.zeros(2))
        self.target = 1

    def forward(self, x):
        if (self.stage >= self.target).all():
            return x * 0.5
        return x + 1


def test_a_decision_computed_from_buffers_only_is_guarded_before_the_call():
    for model, flip in (
        (Binarizer(), lambda m: m.enabled.fill_(1)),
        (StagedMask(), lambda m: m.stage.fill_(2)),
    ):
        jitted = jit(model, backend="eager")
        for call in range(4):
            if call == 2:
                flip(model)  # the other outcome: a guard miss and a new capture
            x = torch.randn(3)
            assert torch.equal(jitted(x), model(x))
        report = jitted.explain()
        assert report.breaks == () and report.captures == 2, str(report)
        assert sum(g.hits for g in report.graphs) == 2


def test_a_decision_on_state_and_an_input_is_still_a_check_after_the_graph():
    class Mixed(StagedMask):
        def forward(self, x):
            if (self.stage + x.sum() > 0).all():
                return x * 0.5
            return x + 1

    model = Mixed()
    jitted = jit(model, backend="eager")
    for _ in range(3):
        x = torch.randn(3)
        assert torch.equal(jitted(x), model(x))
    assert not any("read from" in g for graph in jitted.explain().graphs for g in graph.guards)


class DiceLoss(nn.Module):
    """As MONAI's losses in ParityBench: the axes to reduce over read from a tensor made of
    constants alone, `torch.arange(2, len(input.shape)).tolist()`."""

    def forward(self, input, target):
        axes = torch.arange(2, len(input.shape)).tolist()
        if input.shape[0] > 1:
            axes = [0, *axes]
        intersection = torch.sum(target * input, dim=axes)
        union = torch.sum(target, dim=axes) + torch.sum(input, dim=axes)
        return 1.0 - (2.0 * intersection + 1e-5) / (union + 1e-5)


def test_a_read_of_a_tensor_made_of_constants_alone_is_one_graph():
    """Jitlab.jit raised an internal error here (a state read with no state tensor) and ran eagerly."""
    model = DiceLoss()
    jitted = jit(model)
    for shape in ((4, 3, 5, 5), (4, 3, 5, 5), (1, 3, 5), (4, 3, 5, 5)):
        x, y = torch.rand(shape), torch.rand(shape)
        assert torch.allclose(jitted(x, y), model(x, y))
    report = jitted.explain()
    assert report.fallbacks == () and report.graphs_per_call == 1
    assert report.captures == 2 and sum(g.hits for g in report.graphs) == 2
