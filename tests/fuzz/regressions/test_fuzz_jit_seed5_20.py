"""Found by `jitlab fuzz` (seed 5, program 20, backend "eager"): jitlab.jit differed from
eager execution: call 2 output[0]: values differ (max abs difference 0.49) (in the program as generated; call numbers may differ below).

Shrunk from 4 statements, 2 calls, 0 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 5, program 20).

Features: function, globals, library.
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


W = 5


STEPS4 = itertools.count()


def target(x, n=2, *extra, **options):
    h = x * 1.0
    h = h * (1.0 + 0.1 * next(STEPS4))
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(3, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    x = torch.randn(3, W, dtype=torch.float32)
    return (x,), {}


CALLS = [setup_0, setup_1]
'''


def test_fuzz_jit_outside_iterator_seed5_20(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
