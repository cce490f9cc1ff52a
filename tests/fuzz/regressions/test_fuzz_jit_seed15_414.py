"""Found by `jitlab fuzz` (seed 15, program 414, backend "aot_eager"): jitlab.jit differed from
eager execution: call 4: raised RuntimeError in the training step: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward. (eager did not) (in the program as generated; call numbers may differ below).

Shrunk from 8 statements, 4 calls, 1 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 15, program 414).

Features: autograd, function, guards, training.
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


PW1 = torch.nn.Parameter(torch.linspace(-0.5, 0.5, W * W).reshape(W, W))


PB1 = torch.nn.Parameter(torch.zeros(W))


OPT1 = torch.optim.SGD([PW1, PB1], lr=0.1)


SCHED1 = torch.optim.lr_scheduler.CosineAnnealingLR(OPT1, 5)


WEIGHT = (torch.randn(W, W, generator=torch.Generator().manual_seed(1)) * 0.3).requires_grad_()


def target(x, n=2, *extra, **options):
    h = x * 1.0
    OPT1.zero_grad(set_to_none=True)
    loss1 = ((h.detach().float() @ PW1 + PB1) - h.detach().float().tanh()).pow(2).mean()
    loss1.backward()
    OPT1.step()
    SCHED1.step()
    h = h + loss1.detach().to(h.dtype) * 0.1
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(4, W, dtype=torch.float32, requires_grad=True)
    return (x,), {}


def setup_1(model):
    x = torch.randn(1, W, dtype=torch.float32, requires_grad=True)
    return (x,), {}


def setup_2(model):
    x = torch.randn(1, W, dtype=torch.float32, requires_grad=True)
    return (x,), {}


CALLS = [setup_0, setup_1, setup_2]


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


def test_fuzz_jit_training_step_seed15_414(tmp_path):
    verdict = check_source(PROGRAM, backend="aot_eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
