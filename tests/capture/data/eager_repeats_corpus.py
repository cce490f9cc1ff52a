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


class LaterBuildDiffers(nn.Module):
    """The first three builds in a process agree (the harness builds once to find the state, then once
    for each of the two eager runs) and the fourth starts from other weights, as a parameter
    left uninitialised (`nn.Parameter(torch.Tensor(n))`) does when two eager builds in a row get the
    same freed memory and the build a method runs on, later, other bytes (ParityBench's
    ziplab_LITv2 L2Norm did: its jitlab.jit run looked like a wrong result)."""

    builds = 0

    def __init__(self):
        super().__init__()
        LaterBuildDiffers.builds += 1
        self.weight = nn.Parameter(torch.full((4,), 1.0 if LaterBuildDiffers.builds <= 3 else 2.0))

    def forward(self, x):
        return x * self.weight


@CORPUS.case("later_build_differs", inputs=lambda: ((torch.randn(4),), {}))
def later_build_differs():
    return LaterBuildDiffers()
