"""Side effects: writes to attributes, buffers, inputs, outside lists and globals, printing, randomness.

A captured program must leave the same visible state as eager execution after every call; the
harness compares parameters, buffers, plain attributes, inputs and each case's `observe` value.
"""

import random

import torch
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()

CALL_LOG = []
STATS = {"calls": 0}
SCALE = 1.5


def one(*shape):
    return lambda: ((torch.randn(*shape),), {})


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.counter = 0

    def forward(self, x):
        self.counter += 1
        return self.fc(x)


@CORPUS.case("attribute_counter_increment", inputs=one(2, 4), tags=("attribute", "state"))
def attribute_counter_increment():
    return Counter()


class CountedScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls  # the output depends on the mutated attribute


@CORPUS.case("counter_used_in_output", inputs=one(3, 3), tags=("attribute", "state"))
def counter_used_in_output():
    return CountedScale()


class Cache(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)
        self.cache = None

    def forward(self, x):
        y = self.fc(x)
        self.cache = y.detach()
        return y * 2


@CORPUS.case("attribute_cache_tensor", inputs=one(2, 5), tags=("attribute", "state"))
def attribute_cache_tensor():
    return Cache()


class RunningMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(4))
        self.momentum = 0.1

    def forward(self, x):
        with torch.no_grad():
            self.mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(0))
        return x - self.mean


@CORPUS.case("inplace_buffer_update", inputs=one(5, 4), tags=("buffer", "inplace", "no_grad", "state"))
def inplace_buffer_update():
    return RunningMean()


@CORPUS.case("inplace_input_mutation", inputs=one(3, 4), tags=("inplace", "function"))
def inplace_input_mutation():
    def f(x):
        x.add_(1.0)
        return x * 2

    return f


@CORPUS.case("inplace_ops_on_locals", inputs=one(4, 4), tags=("inplace",))
def inplace_ops_on_locals():
    def f(x):
        y = x.clone()
        y.mul_(2).relu_()
        y[0] = 0.0
        y[:, 1] += 1.0
        return y

    return f


class History(nn.Module):
    def __init__(self):
        super().__init__()
        self.history = []

    def forward(self, x):
        out = x.sum(dim=0)
        self.history.append(out.detach().clone())
        return out


@CORPUS.case("append_to_attribute_list", inputs=one(3, 2), tags=("list", "state"))
def append_to_attribute_list():
    return History()


def _log_model():
    CALL_LOG.clear()

    def f(x):
        CALL_LOG.append(x.shape[0])
        return x.cos()

    return f


@CORPUS.case(
    "append_to_global_list", inputs=one(3, 2), tags=("global", "list"), observe=lambda model: list(CALL_LOG)
)
def append_to_global_list():
    return _log_model()


def _stats_model():
    STATS["calls"] = 0

    def f(x):
        STATS["calls"] += 1
        return x * 3

    return f


@CORPUS.case(
    "global_dict_item_write", inputs=one(2, 2), tags=("global", "dict"), observe=lambda m: dict(STATS)
)
def global_dict_item_write():
    return _stats_model()


class Stats(nn.Module):
    def __init__(self):
        super().__init__()
        self.stats = {"seen": 0, "last_norm": 0.0}

    def forward(self, x):
        self.stats["seen"] += x.shape[0]
        return x / (x.norm() + 1.0)


@CORPUS.case("attribute_dict_item_write", inputs=one(4, 3), tags=("dict", "attribute", "state"))
def attribute_dict_item_write():
    return Stats()


@CORPUS.case("reads_global_scalar", inputs=one(3, 3), tags=("global",))
def reads_global_scalar():
    def f(x):
        return x * SCALE

    return f


@CORPUS.case("print_inside_forward", inputs=one(2, 3), tags=("print",))
def print_inside_forward():
    def f(x):
        y = x.exp()
        print("forward called with batch", x.shape[0])
        return y - 1

    return f


@CORPUS.case("python_random_draw", inputs=one(3, 3), tags=("random",))
def python_random_draw():
    def f(x):
        noise = random.random()  # seeded the same before eager and captured calls
        return x + noise

    return f


@CORPUS.case("torch_random_in_forward", inputs=one(3, 3), tags=("random",))
def torch_random_in_forward():
    def f(x):
        return x + torch.randn_like(x) * 0.1 + torch.rand(3, 3)

    return f


class LazyInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.initialised = False

    def forward(self, x):
        if not self.initialised:
            self.initialised = True
            return self.fc(x) * 0
        return self.fc(x)


@CORPUS.case("first_call_flag", inputs=one(2, 4), tags=("attribute", "state", "branch"))
def first_call_flag():
    return LazyInit()


class ParamUpdate(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(3))

    def forward(self, x):
        with torch.no_grad():
            self.weight.mul_(0.9)
        return x * self.weight


@CORPUS.case("no_grad_parameter_update", inputs=one(2, 3), tags=("no_grad", "inplace", "state"))
def no_grad_parameter_update():
    return ParamUpdate()


class StepCounterBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.steps += 1
        return x * self.steps


@CORPUS.case("tensor_counter_buffer", inputs=one(2, 2), tags=("buffer", "inplace", "state"))
def tensor_counter_buffer():
    return StepCounterBuffer()
