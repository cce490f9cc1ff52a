"""Data escapes inside Python structure: early returns on data, `try`/`except` around a data read,
generators, `with` blocks, loops, and helper functions whose break must resume in the caller's frame.

A tool that splits a call at a data escape must also resume correctly when the escape sits inside
a loop body, a generator being consumed, a context manager, an exception handler or a called
function. Inputs change between calls so that the early returns, the raised exceptions and the
loops' trip counts differ from call to call.
"""

import contextlib
import math

import numpy as np
import torch
from torch import nn

from jitlab.capture import Corpus
from jitlab.capture.inputs import signed, spread

CORPUS = Corpus()


# --- early return on data -----------------------------------------------------------------------


class EarlyExit(nn.Module):
    """Return early when a value read from the data says the rest is not needed."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(4, 4)
        self.second = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.relu(self.first(x))
        if h.sum().item() < 0.5:
            return h * 0
        return torch.tanh(self.second(h)) + h


@CORPUS.case("early_return_on_item", inputs=signed(2, 4), tags=("break", "item", "early-return"))
def build_early_return_on_item():
    return EarlyExit()


def first_row_over(x, limit):
    """A helper that returns from inside a loop as soon as a row's data passes a limit."""
    for i in range(x.shape[0]):
        if float(x[i].max()) > limit:
            return i, x[i]
    return -1, x[-1]


def early_return_from_helper_loop(x):
    y = x.cumsum(0)
    index, row = first_row_over(y, 1.0)
    return row * 2 + index


@CORPUS.case(
    "early_return_from_helper_loop", inputs=signed(4, 3), tags=("break", "float", "early-return", "call")
)
def build_early_return_from_helper_loop():
    return early_return_from_helper_loop


# --- try / except around a data read -------------------------------------------------------------


def checked_scale(t):
    value = float(t.sum())
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"bad scale {value}")
    return value


def try_except_around_float(x):
    """A helper raises on the value it read; the caller catches it and takes another path."""
    y = torch.log(x.sum(1))  # NaN for rows that sum below zero
    try:
        scale = checked_scale(y.exp())
        out = y / scale
    except ValueError:
        out = torch.nan_to_num(y, nan=-1.0)
    return out * 2


@CORPUS.case("try_except_around_float", inputs=signed(3, 3), tags=("break", "float", "exception", "call"))
def build_try_except_around_float():
    return try_except_around_float


class CholeskyOrDiagonal(nn.Module):
    """NumPy's Cholesky on a matrix built from the input; a LinAlgError selects a fallback."""

    def forward(self, x):
        a = x @ x.T * 0.1 + torch.eye(x.shape[0]) * x.sum() * 0.2
        try:
            factor = torch.from_numpy(np.linalg.cholesky(a.numpy()))
        except np.linalg.LinAlgError:
            factor = torch.diag(a.diagonal().abs().sqrt())
        return factor @ x + 1


@CORPUS.case(
    "try_except_numpy_linalg", inputs=signed(3, 3), tags=("break", "numpy", "exception", "round-trip")
)
def build_try_except_numpy_linalg():
    return CholeskyOrDiagonal()


# --- generators around a break ---------------------------------------------------------------------


def row_peaks(t):
    for row in t:
        yield row.max().item()


def generator_of_items(x):
    """A generator yields values read with `.item()`; the caller consumes it in a loop."""
    y = torch.sigmoid(x * 2)
    total = 0.0
    for peak in row_peaks(y):
        if peak > 0.8:
            total += peak
    return y - total


@CORPUS.case("generator_of_items", inputs=signed(4, 3), tags=("break", "generator", "item"))
def build_generator_of_items():
    return generator_of_items


def numpy_stage(blocks):
    for block in blocks:
        a = block.numpy()
        yield torch.from_numpy(np.sort(a, axis=-1))


def generator_pipeline_with_numpy(x):
    """Tensors pass through a generator with a NumPy step in the middle; torch work on both sides."""
    parts = (x * 2).split(2)
    outs = [torch.tanh(p) + 1 for p in numpy_stage(parts)]
    return torch.cat(outs).sum(0)


@CORPUS.case(
    "generator_pipeline_with_numpy", inputs=spread(4, 3), tags=("break", "generator", "numpy", "round-trip")
)
def build_generator_pipeline_with_numpy():
    return generator_pipeline_with_numpy


# --- with blocks around a break ---------------------------------------------------------------------


class NoGradNormalise(nn.Module):
    """A value read under `torch.no_grad()` normalises the result outside it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)

    def forward(self, x):
        h = self.fc(x)
        with torch.no_grad():
            m = float(h.abs().max())
        return h / (m + 1e-3)


@CORPUS.case("no_grad_block_around_float", inputs=spread(2, 5), tags=("break", "with", "no_grad", "float"))
def build_no_grad_block_around_float():
    return NoGradNormalise()


EVENTS: list = []


@contextlib.contextmanager
def traced_section(name):
    EVENTS.append(f"enter {name}")
    try:
        yield
    finally:
        EVENTS.append(f"exit {name}")


def user_context_manager_around_item(x):
    """A user context manager (a generator) records entry and exit around a data read."""
    with traced_section("stats"):
        y = x.exp()
        EVENTS.append(round(y.mean().item(), 4))
    return y.log1p()


@CORPUS.case(
    "user_context_manager_around_item",
    inputs=spread(3, 2),
    tags=("break", "with", "generator", "item", "list"),
    observe=lambda model: list(EVENTS),
)
def build_user_context_manager_around_item():
    EVENTS.clear()
    return user_context_manager_around_item


class Timer:
    """A class-based context manager that keeps what happened in a list attribute."""

    def __init__(self):
        self.log = []

    def __enter__(self):
        self.log.append("start")
        return self

    def __exit__(self, *exc):
        self.log.append("stop")
        return False


class TimedBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.timer = Timer()

    def forward(self, x):
        with self.timer:
            h = self.fc(x)
            n = int((h > 0).sum())
        if len(self.timer.log) > 6:
            del self.timer.log[:2]
        return h * n


@CORPUS.case(
    "class_context_manager_around_int",
    inputs=signed(3, 4),
    tags=("break", "with", "int", "attribute", "mutation-read"),
    observe=lambda model: list(model.timer.log),
)
def build_class_context_manager_around_int():
    return TimedBlock()


# --- inside loops and called functions --------------------------------------------------------------


class NormsPerLayer(nn.Module):
    """A data read in every iteration of a loop over layers, kept in a local list and used after."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def forward(self, x):
        norms = []
        for layer in self.layers:
            x = torch.tanh(layer(x))
            norms.append(x.norm().item())
        return x * max(norms), norms


@CORPUS.case("item_in_every_layer", inputs=spread(2, 4), tags=("break", "item", "loop", "list"))
def build_item_in_every_layer():
    return NormsPerLayer()


def normalise_by_peak(h):
    return h / (float(h.abs().max()) + 1e-3)


class HelperBreakResumesInCaller(nn.Module):
    """The data read is in a helper; the caller goes on with tensor work after it returns."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(6, 6)
        self.out = nn.Linear(6, 2)

    def forward(self, x):
        h = normalise_by_peak(torch.relu(self.inp(x)))
        return self.out(h).softmax(-1)


@CORPUS.case("helper_break_resumes_in_caller", inputs=spread(3, 6), tags=("break", "float", "call", "resume"))
def build_helper_break_resumes_in_caller():
    return HelperBreakResumesInCaller()


def to_numpy_and_back(t):
    return torch.from_numpy(np.abs(t.numpy()))


def nested_helper(t):
    return to_numpy_and_back(t * 2) - t


def numpy_two_calls_deep(x):
    """A NumPy round trip two calls below the caller, with tensor work at every level."""
    y = x.sin()
    z = nested_helper(y)
    return z.exp().sum(1)


@CORPUS.case("numpy_two_calls_deep", inputs=signed(3, 3), tags=("break", "numpy", "call", "resume"))
def build_numpy_two_calls_deep():
    return numpy_two_calls_deep


def loop_exit_on_item(x):
    """A Python `for` loop that stops on data: its trip count changes from call to call."""
    y = x
    count = 0
    for _ in range(6):
        y = y * 0.7 + 0.1
        count += 1
        if y.abs().sum().item() < 1.0:
            break
    return y, count


@CORPUS.case("loop_exit_on_item", inputs=spread(3), tags=("break", "item", "loop"))
def build_loop_exit_on_item():
    return loop_exit_on_item


def iterate_and_append_outside(x):
    """Iterating over a tensor's rows and appending each row's argmax to an outside list,
    whose total is read after the loop."""
    for row in x:
        PICKS.append(int(row.argmax()))
    if len(PICKS) > 8:
        del PICKS[: len(PICKS) - 8]
    return x.sum(0) * sum(PICKS)


PICKS: list = []


@CORPUS.case(
    "iterate_rows_append_outside",
    inputs=spread(3, 4),
    tags=("break", "iterate", "list", "mutation-read", "int"),
    observe=lambda model: list(PICKS),
)
def build_iterate_rows_append_outside():
    PICKS.clear()
    return iterate_and_append_outside
