"""Found by `jitlab fuzz` (seed 1, program 14, backend "eager"): jitlab.jit differed from
eager execution: call 1 output: values differ (max abs difference 0.0075) (in the program as generated; call numbers may differ below).

Shrunk from 8 statements, 5 calls, 0 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 1, program 14).

Features: aliasing, containers, function, globals, guards, loop.
"""


import dataclasses
import random

import torch
from torch import nn


W = 3


SIZES4 = [1, 2, 3]


def target(x, n=2, *extra, **options):
    h = x * 1.0
    for s4 in SIZES4:
        h = h + s4 * 0.01
        SIZES4[-1] = s4 + 1
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(4, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    x = torch.randn(W, 4, dtype=torch.float32).t()
    return (x,), {}


CALLS = [setup_0, setup_1]
'''


def test_fuzz_jit_loop_writes_its_list(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
