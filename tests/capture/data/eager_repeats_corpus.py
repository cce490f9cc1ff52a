"""Cases for the harness's check that eager repeats itself (tests/capture/test_capture_eager_repeats.py)."""

import numpy as np
import torch
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()


class Numbered(nn.Module):
    """Each instance gets the next serial number: two builds are two different programs."""

    made = 0

    def __init__(self):
        super().__init__()
        Numbered.made += 1
        self.serial = Numbered.made

    def forward(self, x):
        return x * self.serial


class NumpyNoise(nn.Module):
    """Draws from NumPy's global generator, which the harness seeds like torch's."""

    def forward(self, x):
        return x + torch.from_numpy(np.random.rand(*x.shape)).to(x.dtype)


@CORPUS.case("numbered", inputs=lambda: ((torch.randn(4),), {}))
def numbered():
    return Numbered()


@CORPUS.case("numpy_noise", inputs=lambda: ((torch.randn(4),), {}))
def numpy_noise():
    return NumpyNoise()
