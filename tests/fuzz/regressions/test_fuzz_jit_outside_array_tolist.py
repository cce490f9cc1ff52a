"""Found by `jitlab fuzz` (seed 3, program 289, backend "eager"): jitlab.jit differed from
eager execution: call 4 output: values differ (max abs difference 0.0596) (in the program as generated; call numbers may differ below).

Shrunk from 9 statements, 5 calls, 2 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 3, program 289).

Features: function, globals, numpy.
"""


import dataclasses
import random

import numpy as np
import torch
from torch import nn


W = 3


TABLE3 = np.linspace(0.5, 1.5, 4).astype(np.float32)


def target(x, n=2, *extra, **options):
    h = x * 1.0
    h = h * sum(TABLE3.tolist())
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(4, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    TABLE3[1] = 1.25
    x = torch.randn(4, W, dtype=torch.float32)
    return (x,), {}


CALLS = [setup_0, setup_1]
'''


def test_fuzz_jit_outside_array_read_by_tolist(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
