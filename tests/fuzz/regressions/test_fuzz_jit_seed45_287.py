"""Found by `jitlab fuzz --programs 300 --seed 45 --backend aot_eager` (program 287), once training
steps kept symbolic sizes with compiling backends: a part of the step took `h` (requiring grad) and
used it only as `h.detach()`; AOTAutograd tied `h` to the part's autograd node anyway, so the
backward of the part's loss ran the backward of the part that made `h` (a zero gradient where eager
leaves None). Fixed in jitlab/jit/frontend/host_split.py: such an input is handed over detached."""

from __future__ import annotations

import pytest

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 45, program 287).

Features: globals, guards, module, training.
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


W = 5


WEIGHT = (torch.randn(W, W, generator=torch.Generator().manual_seed(1)) * 0.3).requires_grad_()


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
        h = h @ WEIGHT.to(h.dtype)
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
    x = torch.randn(6, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    x = torch.randn(2, W, dtype=torch.float32)
    return (x,), {}


def setup_2(model):
    x = torch.randn(2, W, dtype=torch.float32)
    return (x,), {}


CALLS = [setup_0, setup_1, setup_2]
'''


@pytest.mark.slow
def test_fuzz_jit_seed45_287(tmp_path):
    verdict = check_source(PROGRAM, backend="aot_eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
