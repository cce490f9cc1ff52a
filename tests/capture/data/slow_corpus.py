"""Two quick cases, then cases that hang until they are killed: for Ctrl-C during `jitlab capture`.

A hanging case writes its worker's process id to a file named after it in the folder `$SLOW_MARKERS`
when its first call starts, so a test knows when to press Ctrl-C and can check that the worker is gone.
"""

import os
import time
from pathlib import Path

import torch

from jitlab.capture import Corpus

CORPUS = Corpus()


def _inputs():
    return (torch.randn(2, 3),), {}


def _hangs(name):
    def hang(x):
        marker = Path(os.environ["SLOW_MARKERS"]) / name
        if not marker.exists():
            marker.write_text(str(os.getpid()))
        time.sleep(600)
        return x + 1

    return hang


def double(x):
    return x * 2


def shift(x):
    return torch.tanh(x) + 1


@CORPUS.case("quick_a", inputs=_inputs)
def _quick_a():
    return double


@CORPUS.case("quick_b", inputs=_inputs)
def _quick_b():
    return shift


@CORPUS.case("hangs_a", inputs=_inputs)
def _hangs_a():
    return _hangs("hangs_a")


@CORPUS.case("hangs_b", inputs=_inputs)
def _hangs_b():
    return _hangs("hangs_b")


@CORPUS.case("never_started_a", inputs=_inputs)
def _never_a():
    return double


@CORPUS.case("never_started_b", inputs=_inputs)
def _never_b():
    return shift
