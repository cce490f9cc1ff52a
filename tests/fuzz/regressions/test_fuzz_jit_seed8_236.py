"""Found by `jitlab fuzz --programs 500 --seed 8 --backend aot_eager` (program 236, with the training
productions): the step's forward part (the loss, and `h` which the step returns) was compiled as one
AOTAutograd node, so the loss's backward ran the backward of both, and the training step after the
call raised "Trying to backward through the graph a second time" where eager does not. Fixed in
jitlab/jit/frontend/host_split.py: a part with more than one output requiring grad stays
uncompiled."""

from __future__ import annotations

import pytest

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 8, program 236).

Features: autograd, function, training.
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


PW2 = torch.nn.Parameter(torch.linspace(-0.5, 0.5, W * W).reshape(W, W))


PB2 = torch.nn.Parameter(torch.zeros(W))


OPT2 = torch.optim.SGD([PW2, PB2], lr=0.1)


WEIGHT = (torch.randn(W, W, generator=torch.Generator().manual_seed(1)) * 0.3).requires_grad_()


def target(x, n=2, *extra, **options):
    h = x * 1.0
    loss2 = ((h.detach().float() @ PW2 + PB2) - h.detach().float().tanh()).pow(2).mean()
    loss2.backward()
    OPT2.step()
    OPT2.zero_grad(set_to_none=True)
    h = h + loss2.detach().to(h.dtype) * 0.1
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(2, W, dtype=torch.float32, requires_grad=True)
    return (x,), {}


def setup_1(model):
    x = torch.randn(2, W, dtype=torch.float32, requires_grad=True)
    return (x,), {}


CALLS = [setup_0, setup_1]


OPT = None


def finish(model, out):
    global OPT
    loss = out.pow(2).mean()
    if not loss.requires_grad:
        return
    if OPT is None:
        OPT = torch.optim.SGD([WEIGHT], lr=0.1, momentum=0.9)
    OPT.zero_grad()
    loss.backward()
    OPT.step()
'''


@pytest.mark.slow
def test_fuzz_jit_seed8_236(tmp_path):
    verdict = check_source(PROGRAM, backend="aot_eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
