"""The program's own subclasses of dict and OrderedDict made in the call (benchmark_VAE's
`ModelOutput`, in ParityBench): built with their methods interpreted, returned from one graph, and
rebuilt on a cache hit with the same type, items in order and attributes."""

from __future__ import annotations

import collections

import torch
import torch.nn as nn
from jit_helpers import assert_one_graph, check_program

from jitlab.jit import jit


class ModelOutput(collections.OrderedDict):
    """Every entry is both an item and an attribute."""

    def __getitem__(self, k):
        if isinstance(k, str):
            return {key: v for key, v in self.items()}[k]
        return self.to_tuple()[k]

    def __setattr__(self, name, value):
        super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        output = ModelOutput()
        output["embedding"] = self.lin(x)
        output.log_covariance = x * 2
        return output


class Metric(nn.Module):
    def forward(self, x):
        out = ModelOutput(L=x.sum(0), M=x * 3)  # OrderedDict.__init__ calls the class's __setitem__
        return out, out[0] + 1


def _inputs(n: int = 3) -> list[tuple[tuple, dict]]:
    return [((torch.randn(2, 4),), {}) for _ in range(n)]


def test_an_output_filled_item_by_item_is_one_graph_and_rebuilt_whole():
    jitted = check_program(Encoder, _inputs())
    assert_one_graph(jitted)
    out = jitted(torch.randn(2, 4))
    assert type(out) is ModelOutput and list(out) == ["embedding", "log_covariance"]
    assert set(vars(out)) == {"embedding", "log_covariance"} and out.embedding is out["embedding"]


def test_an_output_made_with_keywords_runs_the_classs_setitem_as_eager_code():
    jitted = check_program(Metric, _inputs())
    assert_one_graph(jitted)
    out, first = jitted(torch.ones(2, 4))
    assert list(out) == ["L", "M"] and torch.equal(out.L, torch.full((4,), 2.0))
    assert torch.equal(first, out.L + 1)


class Bag(dict):
    """dict.__init__ stores items without calling `__setitem__` (OrderedDict's calls it)."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value * 2)


class Config(dict):
    def __init__(self, scale, **extra):
        super().__init__(scale=scale, **extra)
        self.ready = True


def bags(x):
    bag = Bag(a=x)  # not doubled: dict.__init__ does not call Bag.__setitem__
    bag["b"] = x  # doubled
    config = Config(0.5, shift=1.0)
    return bag, config, x * config["scale"] + config["shift"], config.ready


def test_dict_subclasses_follow_dicts_own_rules_and_their_init():
    jitted = check_program(lambda: bags, _inputs())
    assert_one_graph(jitted)
    x = torch.randn(2, 4)
    bag, config, _, ready = jitted(x)
    assert type(bag) is Bag and torch.equal(bag["a"], x) and torch.equal(bag["b"], x * 2)
    assert type(config) is Config and config == {"scale": 0.5, "shift": 1.0} and ready and config.ready


def defaults(x):
    table = collections.defaultdict(list)  # a C subclass with a factory: not rebuilt from its items
    table["rows"].append(x.shape[0])
    return x * 2, table


def test_a_defaultdict_is_still_returned_as_eager_code_returns_it():
    jitted = jit(defaults)
    for _ in range(3):
        x = torch.randn(3, 2)
        out, table = jitted(x)
        assert torch.equal(out, x * 2) and type(table) is collections.defaultdict
        assert table == {"rows": [3]} and table.default_factory is list
