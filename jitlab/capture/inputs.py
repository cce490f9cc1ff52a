"""Input makers for corpus cases whose decisions must flip between calls.

A case's `make_inputs` runs under each call's seed (torch's and Python's `random`), so inputs drawn
here differ from call to call in ways chosen to exercise guards: a sign that flips, a scale that
jumps, a maximum that moves. The break corpus (`corpus/breaks/`) uses them in every file; they live
here so a corpus author writes them once.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import torch

Inputs = Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]


def signed(*shape: int) -> Inputs:
    """Inputs shifted by +2.1, -2.2 and +2.7 under the seeds of calls 0, 1 and 2 (Python's `random`
    is seeded with the call's seed too), so that decisions on their sign flip between calls."""
    return lambda: ((torch.randn(*shape) + (random.random() - 0.5) * 6,), {})


def spread(*shape: int) -> Inputs:
    """Inputs scaled by 2.7, 0.6 and 3.1 under the seeds of calls 0, 1 and 2."""
    return lambda: ((torch.randn(*shape) * (random.random() * 3 + 0.2),), {})


def peaked(n: int) -> Inputs:
    """A vector whose largest entry is at index 3, 1 and 0 under the seeds of calls 0, 1 and 2."""

    def make() -> tuple[tuple[Any, ...], dict[str, Any]]:
        x = torch.randn(n) * 0.5
        x[random.randrange(n)] += 3
        return (x,), {}

    return make
