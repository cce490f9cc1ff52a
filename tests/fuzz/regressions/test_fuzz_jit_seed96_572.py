"""Found by `jitlab fuzz --programs 2000 --seed 96 --backend aot_eager` (program 572), when compiled
graphs first took an int that changed between calls (`STATS4["calls"]`, a counter in a global dict)
as a symbolic input: in this training step the caller's `loss.backward()` through the graph's output
then raised "Trying to backward through the graph a second time" on the fourth call, which eager did
not. A compiled graph with host operations (here the step's own backward pass) is now captured once
more with such ints constant (graph/dynamic_ints.keep_ints_constant).
Shrunk from 10 statements, 4 calls, 0 changes."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 96, program 572).

Features: attr_write, autograd, callbacks, function, library, training.
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


HSCALE_3 = 0.5


torch.manual_seed(3)
HOOKED3 = nn.Linear(W, W)
HOOKED3.register_forward_hook(lambda m, inputs, out: out * HSCALE_3)


STATS4 = {}


PW6 = torch.nn.Parameter(torch.linspace(-0.5, 0.5, W * W).reshape(W, W))


PB6 = torch.nn.Parameter(torch.zeros(W))


OPT6 = torch.optim.SGD([PW6, PB6], lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=True)


SCHED6 = torch.optim.lr_scheduler.LambdaLR(OPT6, lambda epoch: 1.0 / (epoch + 1))


WEIGHT = (torch.randn(W, W, generator=torch.Generator().manual_seed(1)) * 0.3).requires_grad_()


def target(x, n=2, *extra, **options):
    h = x * 1.0
    h = HOOKED3(h.float()).to(h.dtype)
    STATS4["calls"] = STATS4.get("calls", 0) + 1
    OPT6.zero_grad(set_to_none=True)
    loss6 = ((h.detach().float() @ PW6 + PB6) - h.detach().float().tanh()).pow(2).mean()
    loss6.backward()
    h = h + PW6.grad.sum().to(h.dtype) * 0.01
    OPT6.step()
    SCHED6.step()
    h = h + loss6.detach().to(h.dtype) * 0.1
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(1, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    x = torch.randn(1, W, dtype=torch.float32)
    return (x,), {}


def setup_2(model):
    x = torch.randn(1, W, dtype=torch.float32)
    return (x,), {}


def setup_3(model):
    x = torch.randn(1, W, dtype=torch.float32)
    return (x,), {}


CALLS = [setup_0, setup_1, setup_2, setup_3]


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


def test_fuzz_jit_seed96_572(tmp_path):
    verdict = check_source(PROGRAM, backend="aot_eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
