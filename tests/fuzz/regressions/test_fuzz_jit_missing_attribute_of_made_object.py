"""Found by `jitlab fuzz --programs 200 --seed 0` (program 199) once the `class_without_init`
production existed: `getattr(made, "extra", 0.0)` on an object made in the call, then `Holder1.extra =
-0.5` between calls; the cache entry kept the default (0.25 apart from eager). The missing attribute's
lookup in the class was not guarded for objects made in the call. Before objects of classes without
an `__init__` were made by the call, this program ran eagerly (the object was of unknown origin); the
same wrong result with a class that has an `__init__` is older (tests/jit/test_jit_class_changes.py,
"getattr default", "missing attribute caught", "hasattr"). Fixed in jitlab/jit/tracing/native_calls.py:
`_guard_missing_attr` and `hasattr` guard the class lookup of objects made in the call."""

from __future__ import annotations

from jitlab.fuzz.oracle import check_source

PROGRAM = '''\
"""A program written by `jitlab fuzz` (seed 0, program 199).

Features: function, globals, patterns.
"""


import dataclasses
import enum
import random

import numpy as np
import torch
from torch import nn


W = 4


HSCALE1 = 0.5


class Holder1:
    def __enter__(self):
        self.saved = HSCALE1
        return self

    def __exit__(self, *args):
        self.saved = None


def target(x, n=2, *extra, **options):
    h = x * 1.0
    ho1 = Holder1()
    ho1.v = h.detach().sum(0)
    h = h - ho1.v * 0.01 + getattr(ho1, 'extra', 0.0)
    return h



def make():
    torch.manual_seed(0)
    return target


def setup_0(model):
    x = torch.randn(1, W, dtype=torch.float32)
    return (x,), {}


def setup_1(model):
    Holder1.extra = -0.5
    x = torch.randn(1, W, dtype=torch.float32)
    return (x,), {}


CALLS = [setup_0, setup_1]
'''


def test_a_class_gaining_an_attribute_a_made_object_lacked_is_seen(tmp_path):
    verdict = check_source(PROGRAM, backend="eager", workdir=tmp_path)
    assert verdict.status in ("equal", "tolerance"), verdict.detail
