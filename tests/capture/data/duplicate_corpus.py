"""Two cases with one name: loading must fail with a clear message."""

import torch

from jitlab.capture import Corpus

CORPUS = Corpus()


def _inputs():
    return (torch.randn(2),), {}


@CORPUS.case("same", inputs=_inputs)
def first():
    return torch.sin


@CORPUS.case("same", inputs=_inputs)
def second():
    return torch.cos
