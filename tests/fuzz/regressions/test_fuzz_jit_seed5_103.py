"""Found by `jitlab fuzz` (seed 5, program 103, backend "eager"): jitlab.jit differed from
eager execution: call 3 output[0]: values differ (max abs difference 1.42) (in the program as generated; call numbers may differ below).

Shrunk from 2 statements, 5 calls, 3 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 5, program 103).

Features: attr_write, classes, guards, library, module.
"""


import collections
import contextlib
import copy
import dataclasses
import enum
import functools
import itertools
import os
import random
import typing

import numpy as np
import torch
from torch import nn


W = 4


class Holder2:
    def __init__(self):
        self.scale = 0.5

    def apply(self, t):
        return t * self.scale


def scaled2(holder, t):
    return t * holder.scale + 0.1


HOLDER2 = Holder2()


CALLABLE2 = functools.partial(scaled2, HOLDER2)


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
        h = CALLABLE2(h)
        return h



def make():
    torch.manual_seed(0)
    return Model()


def setup_0(model):
    x = torch.randn(2, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    x = torch.randn(4, W, dtype=torch.float32)
    return (x,), {}


def setup_2(model):
    HOLDER2.scale = 0.25
    x = torch.randn(3, W, dtype=torch.float32)
    return (x,), {}


CALLS = [setup_0, setup_1, setup_2]
'''


def test_fuzz_jit_outside_partial_seed5_103(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
