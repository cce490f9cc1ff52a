"""Found by `jitlab fuzz` (seed 5, program 181, backend "eager"): jitlab.jit differed from
eager execution: call 5 output: values differ (max abs difference 0.182) (in the program as generated; call numbers may differ below).

Shrunk from 5 statements, 5 calls, 1 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 5, program 181).

Features: containers, function, library.
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


TALLY2 = collections.Counter(a=1, b=2)


def target(x, n=2, *extra, **options):
    h = x * 1.0
    h = h * (1.0 + 0.1 * TALLY2.total())
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(1, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    TALLY2.update(a=3)
    x = torch.randn(1, W, dtype=torch.float32)
    return (x,), {}


CALLS = [setup_0, setup_1]
'''


def test_fuzz_jit_outside_counter_seed5_181(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
