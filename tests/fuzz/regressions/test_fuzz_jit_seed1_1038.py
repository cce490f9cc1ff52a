"""Found by `jitlab fuzz` (seed 1, program 1038, backend "eager"): jitlab.jit differed from
eager execution: call 3 state model.history[2]: DataInt instead of int (in the program as generated;
call 2 of the shrunk one). A call captured with symbolic sizes that raised left jitlab.jit's int
subclass in the outside list. Fixed in jitlab/jit/frontend/driver.py (test_fuzz_jit_dataint_after_raise.py
is the same bug, written by hand).

Shrunk from 5 statements, 3 calls, 1 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 1, program 1038).

Features: aliasing, attr_write, exceptions, guards, module.
"""


import dataclasses
import random

import torch
from torch import nn


W = 5


FAIL2 = False


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
        self.history.append(h.shape[0])
        self.last = h.detach()
        if FAIL2:
            raise RuntimeError("failing on purpose (FAIL2)")
        return h



def make():
    torch.manual_seed(0)
    return Model()


def setup_0(model):
    x = torch.randn(2, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    global FAIL2
    FAIL2 = not FAIL2
    x = torch.randn(6, W, dtype=torch.float32, requires_grad=True)
    return (x,), {}


CALLS = [setup_0, setup_1]
'''


def test_fuzz_jit_seed1_1038(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
