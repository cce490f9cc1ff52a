"""Cases that crash or hang the worker under one capture method only, and one that fails eagerly.

The harness must record these as failures of that method (or of the case) and carry on.
"""

import os
import time

import torch

from jitlab.capture import Corpus

CORPUS = Corpus()


def _inputs():
    return (torch.randn(2, 3),), {}


def crash_under_fx(x):
    if isinstance(x, torch.fx.Proxy):
        os._exit(3)  # the worker process dies mid-case
    return x * 2


def hang_under_trace(x):
    if torch.jit.is_tracing():
        time.sleep(600)
    return x + 1


def fails_eagerly(x):
    raise ValueError("broken on purpose")


@CORPUS.case("crash_under_fx", inputs=_inputs)
def _crash():
    return crash_under_fx


@CORPUS.case("hang_under_trace", inputs=_inputs)
def _hang():
    return hang_under_trace


@CORPUS.case("fails_eagerly", inputs=_inputs)
def _fails():
    return fails_eagerly


@CORPUS.case("plain_after_trouble", inputs=_inputs)
def _plain():
    return torch.tanh
