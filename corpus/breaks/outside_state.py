"""Values read from tensor data and kept in Python: outside lists, dicts, sets and attributes both
changed and read in the same call, prints of tensor values, and logging.

Each container is created outside the call (a module global, cleared when the case's model is built,
or an attribute of the module), grows or changes on every call and is read again later in the same
call, so a tool must follow the write through to the read. The harness compares what every call
printed, the outputs, the module's plain attributes and each case's `observe` value (the outside
container) after every call with eager's. Containers are kept short (a window of the last few
values) so that timing many calls (`--speed`) does not grow them without bound.
"""

import logging

import torch
from torch import nn

from jitlab.capture import Corpus
from jitlab.capture.inputs import peaked, signed, spread

CORPUS = Corpus()

WINDOW = 4


# --- outside lists, dicts and sets changed and read in one call ----------------------------------

ARGMAX_LOG: list = []


def log_argmax_then_len(x):
    """The issue's second program: append `int(argmax)` to an outside list, read its length later."""
    y = x.softmax(-1)
    ARGMAX_LOG.append(int(y.argmax()))
    if len(ARGMAX_LOG) > WINDOW:
        del ARGMAX_LOG[0]
    return y * len(ARGMAX_LOG)


@CORPUS.case(
    "log_argmax_then_len",
    inputs=peaked(6),
    tags=("break", "list", "mutation-read", "int"),
    observe=lambda model: list(ARGMAX_LOG),
)
def build_log_argmax_then_len():
    ARGMAX_LOG.clear()
    return log_argmax_then_len


LOSS_HISTORY: list = []


def running_mean_of_items(x):
    """Append a loss read with `.item()`, then subtract the mean of the window in torch."""
    loss = (x**2).mean()
    LOSS_HISTORY.append(loss.item())
    if len(LOSS_HISTORY) > WINDOW:
        LOSS_HISTORY.pop(0)
    average = sum(LOSS_HISTORY) / len(LOSS_HISTORY)
    return x - average, LOSS_HISTORY[-1]


@CORPUS.case(
    "running_mean_of_items",
    inputs=spread(3, 3),
    tags=("break", "list", "mutation-read", "item", "accumulate"),
    observe=lambda model: list(LOSS_HISTORY),
)
def build_running_mean_of_items():
    LOSS_HISTORY.clear()
    return running_mean_of_items


class AttributeWindow(nn.Module):
    """A list attribute of the module: appended with a data value and read in the same call."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.peaks = []

    def forward(self, x):
        h = self.fc(x)
        self.peaks.append(float(h.max()))
        if len(self.peaks) > 3:
            self.peaks.pop(0)
        return h / (max(self.peaks) + 1.0)


@CORPUS.case(
    "attribute_list_window",
    inputs=spread(2, 4),
    tags=("break", "list", "attribute", "mutation-read", "float"),
)
def build_attribute_list_window():
    return AttributeWindow()


CLASS_COUNTS: dict = {}


def count_predicted_class(x):
    """An outside dict counts predicted classes; the count just written scales the output."""
    y = x.softmax(-1)
    k = int(y.argmax())
    CLASS_COUNTS[k] = CLASS_COUNTS.get(k, 0) + 1
    return y * CLASS_COUNTS[k] + len(CLASS_COUNTS)


@CORPUS.case(
    "dict_counts_by_data",
    inputs=peaked(4),
    tags=("break", "dict", "mutation-read", "int"),
    observe=lambda model: dict(CLASS_COUNTS),
)
def build_dict_counts_by_data():
    CLASS_COUNTS.clear()
    return count_predicted_class


SEEN_CLASSES: set = set()


def seen_classes_set(x):
    """An outside set of classes seen so far, added to and measured in one call."""
    y = x.sigmoid()
    SEEN_CLASSES.add(int(y.argmax()))
    return y * len(SEEN_CLASSES)


@CORPUS.case(
    "set_of_seen_classes",
    inputs=peaked(5),
    tags=("break", "set", "mutation-read", "int"),
    observe=lambda model: sorted(SEEN_CLASSES),
)
def build_set_of_seen_classes():
    SEEN_CLASSES.clear()
    return seen_classes_set


class FloatAccumulator(nn.Module):
    """A Python float attribute accumulated from data and read back in the same call."""

    def __init__(self):
        super().__init__()
        self.total = 0.0
        self.calls = 0

    def forward(self, x):
        self.total += float(x.sum())
        self.calls += 1
        return x / (1.0 + abs(self.total) / self.calls)


@CORPUS.case(
    "float_attribute_accumulator",
    inputs=signed(3, 2),
    tags=("break", "attribute", "mutation-read", "float", "accumulate"),
)
def build_float_attribute_accumulator():
    return FloatAccumulator()


# --- prints of tensor values ----------------------------------------------------------------------


def print_tensor_between_graphs(x):
    """The issue's third program: a print of a tensor-derived value between two computations."""
    y = x * 2
    print("mean of y:", y.mean())
    z = torch.relu(y) + 1
    return z.sum(0)


@CORPUS.case("print_tensor_between_graphs", inputs=signed(3, 3), tags=("break", "print"))
def build_print_tensor_between_graphs():
    return print_tensor_between_graphs


def print_item_formatted(x):
    """A loss read with `.item()` and formatted into a progress line."""
    loss = (x - 1).pow(2).mean()
    print(f"loss={loss.item():.4f}")
    return loss * 2


@CORPUS.case("print_item_formatted", inputs=spread(4, 2), tags=("break", "print", "item", "fstring"))
def build_print_item_formatted():
    return print_item_formatted


def print_tolist_rounded(x):
    """A list of rounded values printed, then more tensor work."""
    y = x.softmax(-1)
    print("probabilities", [round(v, 3) for v in y.tolist()])
    return torch.log(y)


@CORPUS.case("print_tolist_rounded", inputs=spread(4), tags=("break", "print", "tolist"))
def build_print_tolist_rounded():
    return print_tolist_rounded


def print_only_when_large(x):
    """A print guarded by a data-dependent condition, inside a loop over layers of work."""
    for step in range(3):
        x = torch.tanh(x * 1.5)
        if x.abs().max() > 0.9:
            print("step", step, "saturating:", round(float(x.abs().max()), 4))
    return x


@CORPUS.case("print_only_when_large", inputs=spread(3), tags=("break", "print", "loop", "branch"))
def build_print_only_when_large():
    return print_only_when_large


# --- logging ------------------------------------------------------------------------------------


class ListHandler(logging.Handler):
    """Keeps formatted log records in a list, so that the harness can compare them."""

    def __init__(self):
        super().__init__()
        self.records: list = []

    def emit(self, record):
        self.records.append(self.format(record))


LOG_HANDLER = ListHandler()
LOGGER = logging.getLogger("jitlab.corpus.breaks")
LOGGER.addHandler(LOG_HANDLER)
LOGGER.setLevel(logging.INFO)
LOGGER.propagate = False


def logging_norm_info(x):
    """`logger.info` with a value read from the tensor, between two computations."""
    y = x.relu()
    LOGGER.info("norm %.4f", y.norm().item())
    return y * 2 - 1


@CORPUS.case(
    "logging_norm_info",
    inputs=signed(3, 3),
    tags=("break", "logging", "item"),
    observe=lambda model: list(LOG_HANDLER.records),
)
def build_logging_norm_info():
    LOG_HANDLER.records.clear()
    return logging_norm_info


class WarnOnLargeActivation(nn.Module):
    """A warning logged only when an activation is large, with the value in the message."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        peak = h.abs().max()
        if peak > 1.5:
            LOGGER.warning("large activation %.3f", float(peak))
        return torch.tanh(h)


@CORPUS.case(
    "logging_warning_on_data",
    inputs=spread(2, 4),
    tags=("break", "logging", "branch", "float"),
    observe=lambda model: list(LOG_HANDLER.records),
)
def build_logging_warning_on_data():
    LOG_HANDLER.records.clear()
    return WarnOnLargeActivation()
