"""Programs with a part that runs eagerly, between parts the tools capture: a function marked
`torch.compiler.disable`, a library function calling user code back, a decision on random data
after a buffer update; and two with a class statement in a helper, where TorchDynamo breaks the
graph and jitlab.jit, which interprets class statements, does not (tag `class-statement`).

They are kept out of `corpus/*.py` on purpose: they measure something else than the capture rate:
how many graphs one call runs when the tools split the program (`jitlab capture
corpus/breaks/*.py --methods jitlab,dynamo --details`), and whether the result still equals eager.
Inputs change sign between calls, so every branch decided on data or inside the part run eagerly
is taken both ways.
"""

import heapq

import torch
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()


def signed(*shape):
    """Inputs whose sum is positive under some seeds and negative under others."""
    return lambda: ((torch.randn(*shape) + (torch.rand(()) * 6 - 3),), {})


def scale_by_kind(t, kind):
    """Defines a class: TorchDynamo breaks the graph at a class statement; jitlab.jit interprets it."""

    class Options:
        factor = {"wide": 2.0, "narrow": 0.5}[kind]

    return t * Options.factor


@torch.compiler.disable  # runs eagerly under both tools
def crop_if_positive(t):
    if t.sum() > 0:  # decided natively: the shape of the result depends on data
        return t[: t.shape[0] // 2 + 1]
    return t


class EncoderWithOpaqueStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        h = scale_by_kind(h, "wide")  # a class statement between two layers
        return self.out(h).softmax(-1)


@CORPUS.case("opaque_helper_between_layers", inputs=signed(4, 8), tags=("break", "call", "class-statement"))
def opaque_helper_between_layers():
    return EncoderWithOpaqueStep()


@torch.compiler.disable  # the user asks for this function to run eagerly: a break for both tools
def halve(t):
    return t * 0.5


class EncoderWithDisabledStep(EncoderWithOpaqueStep):
    def forward(self, x):
        h = torch.relu(self.inp(x))
        h = halve(h)  # runs eagerly between two graphs
        return self.out(h).softmax(-1)


@CORPUS.case("disabled_helper_between_layers", inputs=signed(4, 8), tags=("break", "call"))
def disabled_helper_between_layers():
    return EncoderWithDisabledStep()


class ShapeFromOpaqueStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        h = crop_if_positive(self.fc(x))  # its result's shape changes with the data
        total = h.new_zeros(())
        for i in range(h.shape[0]):
            total = total + h[i].sum() * (i + 1)
        return total


@CORPUS.case("shape_from_opaque_step", inputs=signed(4, 6), tags=("break", "call", "shape"))
def shape_from_opaque_step():
    return ShapeFromOpaqueStep()


class NoisyGate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.steps.add_(1)  # an in-place update: the call cannot start over
        h = self.fc(x) + torch.randn_like(x) * 0.1  # the decision depends on a random draw
        if h.mean() > 0:
            return torch.relu(h) * 2
        return torch.sigmoid(h)


@CORPUS.case(
    "branch_on_random_data_after_buffer_update", inputs=signed(3, 4), tags=("break", "data", "random")
)
def branch_on_random_data_after_buffer_update():
    return NoisyGate()


class Upcast(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)

    def forward(self, x):
        parts = heapq.nlargest(2, [x, self.fc(x), x * 2], key=importance)  # library code calls back
        return parts[0] - parts[1]


def importance(t):
    return float(t.abs().sum())


@CORPUS.case("library_function_with_user_key", inputs=signed(5), tags=("break", "callback"))
def library_function_with_user_key():
    return Upcast()


class BlocksWithOpaqueStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(6, 6) for _ in range(3))

    def forward(self, x):
        for block in self.blocks:
            x = scale_by_kind(torch.tanh(block(x)), "narrow") + x
        return x


@CORPUS.case(
    "opaque_step_in_every_block", inputs=signed(2, 6), tags=("break", "call", "loop", "class-statement")
)
def opaque_step_in_every_block():
    return BlocksWithOpaqueStep()


@torch.compiler.disable
def checked_sqrt(t):
    if (t < 0).any():
        raise ValueError("negative input")
    return t.sqrt()


class FallbackOnError(nn.Module):
    def forward(self, x):
        y = x * 2
        try:
            z = checked_sqrt(y)
        except ValueError:
            z = y.abs().sqrt().neg()
        return z + 1


@CORPUS.case("exception_from_opaque_step", inputs=signed(3), tags=("break", "call", "exception"))
def exception_from_opaque_step():
    return FallbackOnError()
