"""Found by `jitlab fuzz` (seed 1, program 266, backend "eager"): jitlab.jit differed from
eager execution: call 2: raised KeyError: 'b1' (eager did not) (in the program as generated; call numbers may differ below).

Shrunk from 7 statements, 5 calls, 0 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 1, program 266).

Features: aliasing, containers, function, print, random.
"""


import dataclasses
import random

import torch
from torch import nn


W = 3


def target(x, n=2, *extra, **options):
    h = x * 1.0
    a1, b1 = h * 0.5, h.shape
    h = a1 + b1[1] * 0.01
    h = h * (0.5 + random.random())
    print(f"sum {h.sum().item():.2f}")
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(W, 2, dtype=torch.float32).t()
    return (x,), {}


def setup_1(model):
    x = torch.randn(W, 2, dtype=torch.float32).t()
    return (x,), {}


CALLS = [setup_0, setup_1]
'''


def test_fuzz_jit_seed1_266(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
