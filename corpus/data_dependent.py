"""Data-dependent behaviour: branches on tensor values, `.item()`, and shapes that depend on data.

Here whole-graph capture is hardest: a value-dependent branch needs a guard on the value or a
split, and `nonzero`/boolean masks produce shapes no tracer can know in advance.
"""

import torch
import torch.nn.functional as F
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()


def one(*shape):
    return lambda: ((torch.randn(*shape),), {})


def signed(*shape):
    """Inputs whose sum is positive under some seeds and negative under others (branches flip)."""
    return lambda: ((torch.randn(*shape) + (torch.rand(()) * 4 - 2),), {})


def sometimes_nan():
    x = torch.randn(3, 3)
    if torch.rand(()) < 0.5:
        x[0, 0] = float("nan")
    return (x,), {}


@CORPUS.case("item_branch", inputs=signed(4, 4), tags=("item", "branch"))
def item_branch():
    def f(x):
        if x.sum().item() > 0:
            return x * 2
        return x - 1

    return f


@CORPUS.case("tensor_bool_branch", inputs=signed(4, 4), tags=("branch", "tensor-bool"))
def tensor_bool_branch():
    def f(x):
        if x.mean() > 0:
            return torch.relu(x)
        return torch.sigmoid(x)

    return f


@CORPUS.case("item_as_scale", inputs=one(3, 5), tags=("item",))
def item_as_scale():
    def f(x):
        m = x.abs().max().item()
        return x / m

    return f


@CORPUS.case("nonzero_gather", inputs=one(6, 3), tags=("nonzero", "dynamic-shape"))
def nonzero_gather():
    def f(x):
        idx = (x[:, 0] > 0).nonzero().squeeze(1)
        return x[idx].sum(0)

    return f


@CORPUS.case("boolean_mask_select", inputs=one(5, 5), tags=("mask", "dynamic-shape"))
def boolean_mask_select():
    def f(x):
        return x[x > 0].sum() + x.mean()

    return f


@CORPUS.case(
    "unique_count", inputs=lambda: ((torch.randint(0, 5, (12,)),), {}), tags=("unique", "dynamic-shape")
)
def unique_count():
    def f(x):
        values, counts = torch.unique(x, return_counts=True)
        return values.float() @ counts.float()

    return f


@CORPUS.case("argmax_python_index", inputs=one(4, 6), tags=("item", "index"))
def argmax_python_index():
    def f(x):
        best = int(x.sum(1).argmax())
        return x[best] * 2

    return f


@CORPUS.case(
    "while_tensor_condition", inputs=lambda: ((torch.rand(3) + 2.0,), {}), tags=("loop", "tensor-bool")
)
def while_tensor_condition():
    def f(x):
        steps = 0
        while x.max() > 1.0:
            x = x * 0.5
            steps += 1
        return x, steps

    return f


@CORPUS.case("tolist_python_loop", inputs=one(4), tags=("tolist",))
def tolist_python_loop():
    def f(x):
        total = 0.0
        for value in x.tolist():
            total += value * value
        return x * total

    return f


@CORPUS.case("any_check_guard", inputs=sometimes_nan, tags=("tensor-bool", "branch"))
def any_check_guard():
    def f(x):
        if torch.isnan(x).any():
            x = torch.nan_to_num(x)
        return x.softmax(-1)

    return f


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.skip = nn.Linear(4, 4)

    def forward(self, x):
        gate = torch.sigmoid(self.fc(x)).mean()
        if gate.item() > 0.5:
            return self.fc(x)
        return self.skip(x)


@CORPUS.case("module_item_gate", inputs=one(2, 4), tags=("item", "branch", "module"))
def module_item_gate():
    return Gate()


@CORPUS.case("topk_k_from_data", inputs=one(10), tags=("item", "dynamic-shape"))
def topk_k_from_data():
    def f(x):
        k = int((x > 0).sum().item()) + 1
        return torch.topk(x, k).values.sum()

    return f


@CORPUS.case("float_of_tensor", inputs=one(3, 3), tags=("item", "scalar"))
def float_of_tensor():
    def f(x):
        scale = float(x.std())
        return F.relu(x) * scale

    return f


class EarlyExit(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(4)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
            if x.mean() > 0.2:  # stop early once activations are clearly positive
                break
        return x


@CORPUS.case("early_exit_loop", inputs=signed(2, 4), tags=("loop", "tensor-bool", "module"))
def early_exit_loop():
    return EarlyExit()


@CORPUS.case("nonzero_count_shape_math", inputs=one(8), tags=("nonzero", "dynamic-shape"))
def nonzero_count_shape_math():
    def f(x):
        positive = torch.nonzero(x > 0)
        n = positive.shape[0]
        return x * n

    return f
