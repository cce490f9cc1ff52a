"""A module's forward declared as a staticmethod or a classmethod is called as `self.forward` binds
it. jitlab.jit used to pass the module as a first argument to every forward: a `@staticmethod`
forward (YOLO's Mish activation in ParityBench) raised TypeError, and after a BatchNorm (which
counts as a mutation) that error reached the caller, where eager code runs."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from jitlab.jit import jit


class Mish(nn.Module):
    @staticmethod
    def forward(x):
        return x * F.softplus(x).tanh()


class Scaled(nn.Module):
    scale = 2.0

    @classmethod
    def forward(cls, x):
        return x * cls.scale


class ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.act = Mish()
        self.scale = Scaled()

    def forward(self, x):
        return self.scale(self.act(self.bn(self.conv(x))))


def test_static_and_class_method_forwards_are_one_graph():
    for model in (Mish(), Scaled(), ConvBlock().eval()):
        jitted = jit(model, backend="eager")
        for _ in range(3):
            x = torch.randn(2, 4, 5, 5)
            assert torch.equal(jitted(x), model(x))
        report = jitted.explain()
        assert report.fallbacks == () and report.captures == 1 and report.graphs[0].hits == 2
