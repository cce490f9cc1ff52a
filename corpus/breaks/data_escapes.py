"""Tensor data that leaves torch mid-call: `.numpy()`, `.tolist()`, `.item()`, `int`/`float`/`bool`
of a tensor, and iteration over a tensor, each read by Python between two tensor computations.

TorchDynamo splits such programs into graph -> Python -> graph (or traces the NumPy part into the
graph); a JIT that cannot split there runs the whole call eagerly. Inputs change between calls (the
sign of their sum, the position of their largest entry), so whatever a tool decided from the data
of one call is exercised with other data on the next. Run with
`jitlab capture corpus/breaks/*.py --methods jitlab,dynamo --details`.
"""

import math

import numpy as np
import torch
from torch import nn

from jitlab.capture import Corpus
from jitlab.capture.inputs import peaked, signed, spread

CORPUS = Corpus()


# --- NumPy round trips -------------------------------------------------------------------------


class NumpyMaxMidFunction(nn.Module):
    """The issue's first program: a float from NumPy in the middle of the call."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        y = torch.tanh(self.fc(x))
        m = float(y.detach().numpy().max())
        return y / (abs(m) + 1.0) + 1


@CORPUS.case("numpy_max_mid_function", inputs=signed(4, 6), tags=("break", "numpy", "float"))
def build_numpy_max_mid_function():
    return NumpyMaxMidFunction()


class NumpyRoundTrip(nn.Module):
    """A NumPy function applied to an intermediate value, the result brought back as a tensor."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)

    def forward(self, x):
        h = self.fc(x).detach()
        a = np.clip(h.numpy(), -0.5, 0.5) * 2.0
        back = torch.from_numpy(a)
        return torch.relu(back + h) * 3


@CORPUS.case("numpy_round_trip", inputs=signed(3, 5), tags=("break", "numpy", "round-trip"))
def build_numpy_round_trip():
    return NumpyRoundTrip()


def numpy_standardise(x):
    """Statistics computed in NumPy, read as Python floats, applied in torch."""
    a = (x * 2).numpy()
    mean, std = float(np.mean(a)), float(np.std(a))
    return (x * 2 - mean) / (std + 1e-3)


@CORPUS.case("numpy_statistics_to_python", inputs=spread(4, 4), tags=("break", "numpy", "float"))
def build_numpy_statistics_to_python():
    return numpy_standardise


def numpy_argsort_gather(x):
    """An ordering computed in NumPy drives indexing in torch."""
    scores = x.sum(dim=1)
    order = np.argsort(scores.numpy())[::-1].copy()
    ranked = x[torch.from_numpy(order)]
    return ranked.cumsum(0)


@CORPUS.case("numpy_argsort_gather", inputs=spread(5, 3), tags=("break", "numpy", "index"))
def build_numpy_argsort_gather():
    return numpy_argsort_gather


# --- tolist -------------------------------------------------------------------------------------


def tolist_filtered_sum(x):
    """Python filters the values of a tensor (a decision per value) and sums what it kept."""
    y = x.tanh()
    values = y.tolist()
    kept = sum(v * v for v in values if v > 0)
    return y * kept + 1


@CORPUS.case("tolist_filtered_sum", inputs=signed(6), tags=("break", "tolist", "generator"))
def build_tolist_filtered_sum():
    return tolist_filtered_sum


def tolist_python_argmax(x):
    """The best row chosen in Python from a list of scores, then used as an index."""
    scores = x.mean(dim=1).tolist()
    best = max(range(len(scores)), key=scores.__getitem__)
    return x[best] * 2 - x.mean(0)


@CORPUS.case("tolist_python_argmax", inputs=spread(4, 3), tags=("break", "tolist", "index"))
def build_tolist_python_argmax():
    return tolist_python_argmax


def tolist_rounded_labels(x):
    """Python turns values into labels (strings) returned beside a tensor."""
    y = torch.sigmoid(x)
    labels = ["high" if v > 0.5 else "low" for v in y.tolist()]
    return y * 2, labels


@CORPUS.case("tolist_rounded_labels", inputs=signed(5), tags=("break", "tolist", "str"))
def build_tolist_rounded_labels():
    return tolist_rounded_labels


# --- item / int / float / bool read by Python ---------------------------------------------------


class ItemWhileLoop(nn.Module):
    """Python control flow driven by `.item()`: halve until the norm is small enough."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x) * 4
        steps = 0
        while y.norm().item() > 2.0 and steps < 6:
            y = y * 0.5
            steps += 1
        return y.relu(), steps


@CORPUS.case("item_while_loop", inputs=spread(3, 4), tags=("break", "item", "loop"))
def build_item_while_loop():
    return ItemWhileLoop()


WEIGHTS = [0.5, -1.0, 2.0, 0.25, 3.0]


def int_argmax_indexes_python_list(x):
    """`int()` of an argmax picks an entry of a Python list."""
    y = x.softmax(-1)
    k = int(y.argmax())
    return y * WEIGHTS[k] + k


@CORPUS.case("int_argmax_indexes_python_list", inputs=peaked(5), tags=("break", "int", "index"))
def build_int_argmax_indexes_python_list():
    return int_argmax_indexes_python_list


def float_in_math_and_fstring(x):
    """`float()` of a tensor goes through `math` and into a formatted string."""
    y = x.exp()
    scale = math.log1p(float(y.sum()))
    return y / scale, f"scale={scale:.3f}"


@CORPUS.case("float_in_math_and_fstring", inputs=signed(4), tags=("break", "float", "fstring"))
def build_float_in_math_and_fstring():
    return float_in_math_and_fstring


def bool_flag_returned(x):
    """`bool()` of a tensor kept as a Python flag, used twice and returned."""
    y = x * 3
    positive = bool((y.sum() > 0).item())
    z = y if positive else -y
    return z.sqrt() if positive else z.log1p(), positive


@CORPUS.case("bool_flag_returned", inputs=signed(3, 3), tags=("break", "bool", "branch"))
def build_bool_flag_returned():
    return bool_flag_returned


def item_scale_and_branch(x, threshold=0.0):
    """A value read with `.item()` both scales the result and decides a branch (on a Python input)."""
    m = x.max().item()
    y = x / (abs(m) + 1)
    if m > threshold:
        y = torch.sin(y)
    return y + m


@CORPUS.case(
    "item_scale_and_branch",
    inputs=lambda: ((torch.randn(6) * 2,), {"threshold": float(torch.rand(()) * 2)}),
    tags=("break", "item", "branch", "kwargs"),
)
def build_item_scale_and_branch():
    return item_scale_and_branch


# --- iteration over a tensor in Python ----------------------------------------------------------


def iterate_rows_with_decisions(x):
    """A Python loop over the rows of a tensor, deciding per row on its data."""
    acc = torch.zeros(x.shape[1])
    for row in x:
        if row.sum() > 0:
            acc = acc + row
        else:
            acc = acc - row * 0.5
    return acc


@CORPUS.case("iterate_rows_with_decisions", inputs=signed(4, 3), tags=("break", "iterate", "branch"))
def build_iterate_rows_with_decisions():
    return iterate_rows_with_decisions


def iterate_values_as_floats(x):
    """A Python loop over a 1-d tensor reading every element as a float."""
    y = x.tanh()
    total = 0.0
    for v in y:
        total += float(v) ** 2
    return y * math.sqrt(total)


@CORPUS.case("iterate_values_as_floats", inputs=signed(5), tags=("break", "iterate", "float"))
def build_iterate_values_as_floats():
    return iterate_values_as_floats
