"""Found by `jitlab fuzz` (seed 5, program 99, backend "eager"): jitlab.jit differed from
eager execution: call 4 output: values differ (max abs difference 0.0394) (in the program as generated; call numbers may differ below).

Shrunk from 8 statements, 4 calls, 2 changes. The program is below as `PROGRAM`; the test runs it eagerly and
under jitlab.jit from identical starting states and compares what a user could see."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 5, program 99).

Features: defaults, function.
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


W = 3


def helper3(t, k=2, *, shift=0.5):
    return t * k * 0.5 + shift


def target(x, n=2, *extra, **options):
    h = x * 1.0
    h = helper3(h, shift=-0.25)
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(4, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    helper3.__defaults__ = (1,)
    x = torch.randn(4, W, dtype=torch.float32)
    return (x,), {}


CALLS = [setup_0, setup_1]
'''


def test_fuzz_jit_function_defaults_seed5_99(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
