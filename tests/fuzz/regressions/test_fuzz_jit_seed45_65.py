"""Found by `jitlab fuzz --programs 300 --seed 45 --backend aot_eager` (program 65), once training
steps kept symbolic sizes with compiling backends: a part of the step took `h` (requiring grad) and
used it only as `h.detach()`; AOTAutograd tied `h` to the part's autograd node anyway, so the
backward of the part's loss ran the backward of the part that made `h` (a zero gradient where eager
leaves None, and the caller's later backward raised). Fixed in jitlab/jit/frontend/host_split.py:
such an input is handed over detached."""

from __future__ import annotations

import pytest

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 45, program 65).

Features: aliasing, attr_write, autograd, call_objects, guards, module, training, varargs.
"""


import collections
import contextlib
import copy
import dataclasses
import enum
import os
import random
import typing

import numpy as np
import torch
from torch import nn


W = 3


@dataclasses.dataclass
class Memo1:
    keys: typing.Any = None
    steps: int = 0
    layers: list = dataclasses.field(default_factory=list)


MEMO1 = Memo1()


PW2 = torch.nn.Parameter(torch.linspace(-0.5, 0.5, W * W).reshape(W, W))


PB2 = torch.nn.Parameter(torch.zeros(W))


LR2 = 0.1


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.inner = nn.Linear(width, width)
        self.gain = 0.5

    def forward(self, t):
        return torch.relu(self.inner(t)) * self.gain + t


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(W, W)
        self.block = Block(W)
        self.layers = nn.ModuleList([nn.Linear(W, W), nn.Tanh()])
        self.drop = nn.Dropout(0.5)
        self.register_buffer("count", torch.zeros(W))
        self.register_buffer("ema", torch.zeros(W))
        self.scale = 0.5
        self.mode = "a"
        self.history = []

    def forward(self, x, n=2, *extra, **options):
        h = x * 1.0
        m1 = options['memo1']
        if not m1.layers:
            m1.layers.append(Memo1())
        layer1 = m1.layers[0]
        layer1.keys = h.detach() if layer1.keys is None else torch.cat([layer1.keys, h.detach()], 0)
        h = h * 0.5 + layer1.keys[-h.shape[0]:] * 0.5
        if PW2.grad is None:
            h = h * 0.5
        loss2 = ((h.detach().float() @ PW2 + PB2) - h.detach().float().tanh()).pow(2).mean()
        loss2.backward()
        h = h + PW2.grad.mean().to(h.dtype)
        return h



def make():
    torch.manual_seed(0)
    return Model()


def setup_0(model):
    x = torch.randn(3, W, dtype=torch.float32, requires_grad=True)
    return (x,), {'double': True, 'memo1': globals().get('MEMO1')}


def setup_1(model):
    x = torch.randn(W, 3, dtype=torch.float32, requires_grad=True).t()
    return (x,), {'double': True, 'memo1': globals().get('MEMO1')}


def setup_2(model):
    x = torch.randn(W, 3, dtype=torch.float32, requires_grad=True).t()
    return (x,), {'double': True, 'memo1': globals().get('MEMO1')}


def setup_3(model):
    x = torch.randn(W, 3, dtype=torch.float32, requires_grad=True).t()
    return (x,), {'double': True, 'memo1': globals().get('MEMO1')}


CALLS = [setup_0, setup_1, setup_2, setup_3]


OPT = None


def finish(model, out):
    global OPT
    loss = out.pow(2).mean()
    if not loss.requires_grad:
        return
    if OPT is None:
        OPT = torch.optim.SGD(list(model.parameters()), lr=0.1, momentum=0.9)
    OPT.zero_grad()
    loss.backward()
    OPT.step()
'''


@pytest.mark.slow
def test_fuzz_jit_seed45_65(tmp_path):
    verdict = check_source(PROGRAM, backend="aot_eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
