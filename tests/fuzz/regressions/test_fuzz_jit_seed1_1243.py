"""Found by `jitlab fuzz` (seed 1, program 1243, backend "eager"): jitlab.jit differed from
eager execution: call 3 output['value']: values differ (max abs difference 0.0152) (in the program as generated; call numbers may differ below).

Shrunk from 10 statements, 3 calls, 1 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 1, program 1243).

Features: control_data, control_shape, function, random, tensor_ops.
"""


import dataclasses
import random

import torch
from torch import nn


W = 4


def target(x, n=2, *extra, **options):
    h = x * 1.0
    b2 = x.shape[0]
    h = h + torch.arange(b2, dtype=h.dtype).unsqueeze(1) * 0.1
    h = h * (0.5 + random.random())
    if h.max().item() > 0.5:
        h = h + 1.5
    else:
        h = torch.sigmoid(h) * 2.0
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(2, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    x = torch.randn(2, W, dtype=torch.float32)
    return (x,), {}


def setup_2(model):
    x = torch.randn(2, W, dtype=torch.float32)
    return (x,), {}


CALLS = [setup_0, setup_1, setup_2]
'''


def test_fuzz_jit_seed1_1243(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
