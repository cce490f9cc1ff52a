"""Found by `jitlab fuzz` (seed 0, program 111, backend "eager"): jitlab.jit differed from
eager execution (before map, filter, sorted, max and reduce guarded what they iterate): call 4 output['h']: values differ (max abs difference 0.00632) (in the program as generated; call numbers may differ below).

Shrunk from 5 statements, 5 calls, 1 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 0, program 111).

Features: callbacks, containers, function, globals.
"""


import dataclasses
import random

import numpy as np
import torch
from torch import nn


W = 5


import functools


VALS1 = [0.5, 1.5, 2.0]


TABLE1 = {"a": 0.5, "bb": 1.5}


def target(x, n=2, *extra, **options):
    h = x * 1.0
    h = h + sum(map(lambda key, v: len(key) * v, TABLE1, VALS1)) * 0.01
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(4, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    TABLE1["ccc"] = 2.5
    x = torch.randn(4, W, dtype=torch.float32)
    return (x,), {}


CALLS = [setup_0, setup_1]
'''


def test_fuzz_jit_map_over_a_dict_that_grows(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
